#include "app/http_frontend.hpp"

#include "app/ops_view.hpp"
#include "kafka/offsets.hpp"
#include "messages/api_error.hpp"
#include "messages/dlq_messages.hpp"
#include "messages/order_messages.hpp"
#include "persistence/ops_queries.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <random>
#include <regex>
#include <thread>

namespace ef::app {

namespace {

using json = nlohmann::json;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& msg,
                const std::string& field = {}) {
  json body{{"error", msg}};
  if (!field.empty())
    body["field"] = field;
  send_json(res, status, body);
}

/// A request that cannot become a command: the HTTP status and the error.
struct bad_request {
  int status;
  std::string message;
  std::string field;
};

bool is_json_content(const httplib::Request& req) {
  auto type = req.get_header_value("Content-Type");
  auto semi = type.find(';');
  auto base = type.substr(0, semi);
  for (auto& c : base)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (!base.empty() && base.back() == ' ')
    base.pop_back();
  return base == "application/json";
}

std::int64_t require_int(const json& obj, const char* key,
                         const std::string& field) {
  auto i = obj.find(key);
  if (i == obj.end())
    throw bad_request{400, "is required", field};
  if (!i->is_number_integer())
    throw bad_request{400, "must be an integer", field};
  if (i->is_number_unsigned() &&
      i->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw bad_request{400, "is out of range", field};
  return i->get<std::int64_t>();
}

std::string require_string(const json& obj, const char* key,
                           const std::string& field) {
  auto i = obj.find(key);
  if (i == obj.end())
    throw bad_request{400, "is required", field};
  if (!i->is_string())
    throw bad_request{400, "must be a string", field};
  return i->get<std::string>();
}

/// FNV-1a 64 of the canonical body (keys sorted by nlohmann's std::map), so
/// the same order sent with reordered keys or spacing is "the same body".
std::string fingerprint(const json& body) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : body.dump()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(h));
  return buf;
}

/// Parses POST /orders into a command; throws bad_request.
create_order parse_create(const httplib::Request& req) {
  if (!is_json_content(req))
    throw bad_request{415, "Content-Type must be application/json",
                      "Content-Type"};
  auto body = json::parse(req.body, nullptr, false);
  if (body.is_discarded())
    throw bad_request{400, "body is not valid JSON", "body"};
  if (!body.is_object())
    throw bad_request{400, "body must be a JSON object", "body"};
  create_order cmd;
  cmd.customer_id = require_string(body, "customer_id", "customer_id");
  auto items = body.find("items");
  if (items == body.end())
    throw bad_request{400, "is required", "items"};
  if (!items->is_array())
    throw bad_request{400, "must be an array", "items"};
  for (size_t i = 0; i < items->size(); ++i) {
    auto& item = (*items)[i];
    auto field = "items[" + std::to_string(i) + "]";
    if (!item.is_object())
      throw bad_request{400, "must be an object", field};
    cmd.items.push_back(
      {require_string(item, "sku", field + ".sku"),
       require_int(item, "qty", field + ".qty"),
       require_int(item, "price_cents", field + ".price_cents")});
  }
  cmd.idempotency_key = req.get_header_value("Idempotency-Key");
  cmd.request_fingerprint = fingerprint(body);
  return cmd;
}

bool is_hex(const std::string& s, size_t from, size_t n) {
  for (size_t i = from; i < from + n; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i])))
      return false;
  return true;
}

/// Continues the caller's W3C trace context, or starts a new trace.
std::string traceparent_of(const httplib::Request& req) {
  auto tp = req.get_header_value("traceparent");
  if (tp.size() == 55 && tp[2] == '-' && tp[35] == '-' && tp[52] == '-' &&
      is_hex(tp, 0, 2) && is_hex(tp, 3, 32) && is_hex(tp, 36, 16) &&
      is_hex(tp, 53, 2))
    return tp;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[56];
  std::snprintf(buf, sizeof(buf), "00-%016llx%016llx-%016llx-01",
                static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

/// Maps an error reply of the tree to an HTTP response.
void send_caf_error(httplib::Response& res, const caf::error& err) {
  if (err.category() != api_error_category()) {
    // Timeout or a dead receiver: the tree is busy or restarting.
    send_error(res, 503, "service unavailable: " + to_string(err));
    return;
  }
  std::string field, message;
  auto& ctx = err.context();
  if (ctx.match_elements<std::string, std::string>()) {
    field = ctx.get_as<std::string>(0);
    message = ctx.get_as<std::string>(1);
  }
  int status = 500;
  switch (static_cast<api_errc>(err.code())) {
  case api_errc::invalid:
    status = 400;
    break;
  case api_errc::not_found:
    status = 404;
    break;
  case api_errc::conflict:
    status = 409;
    break;
  case api_errc::unavailable:
    status = 503;
    break;
  case api_errc::internal:
    status = 500;
    break;
  }
  send_error(res, status, message, field);
}

} // namespace

struct http_frontend::impl {
  caf::actor_system& sys;
  caf::actor root;
  config::settings cfg;
  httplib::Server server;
  std::thread thread;
  int port = 0;

  std::shared_ptr<telemetry> metrics;
  endpoints where;

  impl(caf::actor_system& s, caf::actor r, const config::settings& c,
       std::shared_ptr<telemetry> m, endpoints w)
      : sys(s), root(std::move(r)), cfg(c), metrics(std::move(m)),
        where(std::move(w)) {
    // nop
  }

  /// Route label of a path: the pattern, never the IDs in it.
  static std::string route_of(const std::string& path) {
    static const std::vector<std::pair<std::regex, std::string>> routes{
      {std::regex("^/orders$"), "/orders"},
      {std::regex("^/orders/[^/]+/cancel$"), "/orders/{id}/cancel"},
      {std::regex("^/orders/[^/]+$"), "/orders/{id}"},
      {std::regex("^/admin/dlq/groups$"), "/admin/dlq/groups"},
      {std::regex("^/admin/dlq$"), "/admin/dlq"},
      {std::regex("^/admin/dlq/[^/]+/replay$"), "/admin/dlq/{id}/replay"},
      {std::regex("^/admin/dlq/[^/]+/discard$"), "/admin/dlq/{id}/discard"},
      {std::regex("^/admin/dlq/[^/]+$"), "/admin/dlq/{id}"},
      {std::regex("^/(metrics|healthz|readyz)$"), ""},
    };
    for (auto& [re, name] : routes)
      if (std::regex_match(path, re))
        return name.empty() ? path : name;
    return "other";
  }

  void observability_routes() {
    server.Get(
      "/metrics", [this](const httplib::Request&, httplib::Response& res) {
        // Database and broker are read separately: an outage of one must not
        // freeze the other's gauges (the outbox age matters most when the
        // broker is down).
        ops_view v;
        try {
          v.rows = persistence::read_ops_rows(where.database_dsn);
          export_gauges(v, *metrics);
        } catch (const std::exception& e) {
          spdlog::warn("metrics: cannot read the database: {}", e.what());
        }
        try {
          read_lag(cfg, where.kafka_brokers, v, 2000);
          export_lag(v, *metrics);
        } catch (const std::exception& e) {
          spdlog::warn("metrics: cannot read the broker: {}", e.what());
        }
        res.set_content(metrics->render_prometheus(),
                        "text/plain; version=0.0.4");
      });
    server.Get("/readyz", [this](const httplib::Request&,
                                 httplib::Response& res) {
      json body;
      bool ready = true;
      std::string error;
      if (persistence::database_reachable(where.database_dsn, error)) {
        body["database"] = "ok";
      } else {
        body["database"] = error;
        ready = false;
      }
      try {
        kafka::log_end_offsets(where.kafka_brokers, cfg.kafka.topic,
                               cfg.kafka.partitions);
        body["broker"] = "ok";
      } catch (const std::exception& e) {
        body["broker"] = e.what();
        ready = false;
      }
      // What the broker lost and what was queued again for it (details;
      // gaps are repaired when found, so they do not make it unready).
      try {
        body["repair"] = json::parse(
          repair_json(persistence::repair_store(where.database_dsn).summary()));
      } catch (const std::exception& e) {
        body["repair"] = e.what();
      }
      // Any supervisor with a child waiting for a restart: not ready.
      auto m = metrics->render_prometheus();
      std::regex down(R"re(actors_down\{supervisor="([^"]+)"\} ([0-9.]+))re");
      std::vector<std::string> waiting;
      for (std::sregex_iterator i(m.begin(), m.end(), down), end; i != end; ++i)
        if (std::stod((*i)[2]) > 0)
          waiting.push_back((*i)[1]);
      body["actors"] = waiting.empty() ? json("ok") : json(waiting);
      ready = ready && waiting.empty();
      body["ready"] = ready;
      send_json(res, ready ? 200 : 503, body);
    });
  }

  /// Sends `cmd` to the tree and waits for the reply within the timeout.
  template <class Reply, class Command, class OnReply>
  void ask(httplib::Response& res, Command cmd, OnReply on_reply) {
    caf::scoped_actor self{sys};
    self
      ->request(root, std::chrono::milliseconds(cfg.http.request_timeout_ms),
                std::move(cmd))
      .receive([&](Reply& reply) { on_reply(reply); },
               [&](caf::error& err) { send_caf_error(res, err); });
  }

  /// Checks the bearer token of an admin request; on success returns the
  /// token's name (recorded with the action), else answers and returns "".
  std::string authorize(const httplib::Request& req, httplib::Response& res) {
    auto& configured = cfg.http.admin_token;
    if (configured.empty()) {
      send_error(res, 404, "admin endpoints are off (set http.admin-token)");
      return {};
    }
    auto colon = configured.find(':');
    auto name = colon == std::string::npos ? std::string("admin")
                                           : configured.substr(0, colon);
    auto secret =
      colon == std::string::npos ? configured : configured.substr(colon + 1);
    auto auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) != 0) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, "a bearer token is required", "Authorization");
      return {};
    }
    auto given = auth.substr(7);
    // Compare in constant time: the length is not secret, the bytes are.
    unsigned char diff = given.size() == secret.size() ? 0 : 1;
    for (size_t i = 0; i < given.size() && i < secret.size(); ++i)
      diff |= static_cast<unsigned char>(given[i] ^ secret[i]);
    if (diff != 0) {
      send_error(res, 403, "the bearer token is not valid", "Authorization");
      return {};
    }
    return "token:" + name;
  }

  void admin(const httplib::Request& req, httplib::Response& res,
             dlq_command cmd) {
    auto who = authorize(req, res);
    if (who.empty())
      return;
    cmd.actor = who;
    ask<dlq_reply>(res, std::move(cmd), [&](dlq_reply& r) {
      res.status = 200;
      res.set_content(r.json, "application/json");
    });
  }

  void admin_routes() {
    server.Get("/admin/dlq", [this](const httplib::Request& req,
                                    httplib::Response& res) {
      admin(req, res, {"list", 0, req.get_param_value("status"), ""});
    });
    server.Get("/admin/dlq/groups",
               [this](const httplib::Request& req, httplib::Response& res) {
                 admin(req, res, {"groups", 0, "", ""});
               });
    auto by_id = [this](const char* verb) {
      return [this, verb](const httplib::Request& req, httplib::Response& res) {
        std::int64_t id = 0;
        try {
          id = std::stoll(req.matches[1]);
        } catch (const std::exception&) {
          return send_error(res, 404, "no such DLQ entry", "id");
        }
        admin(req, res, {verb, id, "", ""});
      };
    };
    server.Get(R"(/admin/dlq/(\d+))", by_id("show"));
    server.Post(R"(/admin/dlq/(\d+)/replay)", by_id("replay"));
    server.Post(R"(/admin/dlq/(\d+)/discard)", by_id("discard"));
  }

  void routes() {
    server.Post(
      "/orders", [this](const httplib::Request& req, httplib::Response& res) {
        create_order cmd;
        try {
          cmd = parse_create(req);
        } catch (const bad_request& e) {
          return send_error(res, e.status, e.message, e.field);
        }
        cmd.traceparent = traceparent_of(req);
        ask<order_accepted>(res, std::move(cmd), [&](order_accepted& r) {
          if (r.replayed)
            res.set_header("Idempotent-Replayed", "true");
          send_json(res, 201,
                    {{"order_id", r.order_id},
                     {"event_id", r.event_id},
                     {"status", r.status}});
        });
      });
    server.Post(R"(/orders/([^/]+)/cancel)", [this](const httplib::Request& req,
                                                    httplib::Response& res) {
      cancel_order cmd{req.matches[1], traceparent_of(req)};
      ask<cancel_accepted>(res, std::move(cmd), [&](cancel_accepted& r) {
        send_json(res, 202,
                  {{"order_id", r.order_id}, {"event_id", r.event_id}});
      });
    });
    server.Get(R"(/orders/([^/]+))", [this](const httplib::Request& req,
                                            httplib::Response& res) {
      ask<order_view>(res, get_order{req.matches[1]}, [&](order_view& v) {
        res.status = 200;
        res.set_content(v.json, "application/json");
      });
    });
    admin_routes();
    observability_routes();
    server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, {{"status", "ok"}});
    });
    // Errors produced by httplib itself (404 route, 413 body) get the same
    // JSON shape as ours.
    server.set_error_handler(
      [](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty())
          return;
        if (res.status == 413)
          send_error(res, 413, "request body too large", "body");
        else if (res.status == 404)
          send_error(res, 404, "no such route");
        else
          send_error(res, res.status, "request failed");
      });
  }
};

http_frontend::http_frontend(caf::actor_system& sys, caf::actor root,
                             const config::settings& cfg,
                             std::shared_ptr<telemetry> metrics,
                             endpoints where)
    : impl_(std::make_unique<impl>(sys, std::move(root), cfg,
                                   metrics ? std::move(metrics)
                                           : std::make_shared<telemetry>(),
                                   std::move(where))) {
  // nop
}

http_frontend::~http_frontend() {
  stop();
}

int http_frontend::start() {
  auto& s = impl_->server;
  auto threads = impl_->cfg.http.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(static_cast<size_t>(impl_->cfg.http.max_body_bytes));
  s.set_keep_alive_max_count(1000);
  s.set_keep_alive_timeout(2);
  // Small JSON replies on kept-alive connections otherwise wait for the
  // peer's delayed ACK (Nagle): ~40 ms per request.
  s.set_tcp_nodelay(true);
  impl_->routes();
  // Request counts and latency by route and status class. The logger runs
  // on the worker thread right after the handler.
  thread_local std::chrono::steady_clock::time_point request_started;
  s.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_started = std::chrono::steady_clock::now();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_logger(
    [this](const httplib::Request& req, const httplib::Response& res) {
      auto route = impl::route_of(req.path);
      auto& m = *impl_->metrics;
      m.add("http_requests_total",
            {{"route", route},
             {"status", std::to_string(res.status / 100) + "xx"}});
      m.observe("http_request_duration_seconds", {{"route", route}},
                std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              request_started)
                  .count());
    });
  auto& host = impl_->cfg.http.host;
  int port = impl_->cfg.http.port;
  if (port == 0)
    port = s.bind_to_any_port(host);
  else if (!s.bind_to_port(host, port))
    port = -1;
  if (port <= 0)
    throw std::runtime_error("cannot bind HTTP to " + host + ":" +
                             std::to_string(impl_->cfg.http.port));
  impl_->port = port;
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  return port;
}

void http_frontend::stop() {
  if (!impl_->thread.joinable())
    return;
  impl_->server.stop();
  impl_->thread.join();
}

std::string http_frontend::url() const {
  return "http://" + impl_->cfg.http.host + ":" + std::to_string(impl_->port);
}

} // namespace ef::app
