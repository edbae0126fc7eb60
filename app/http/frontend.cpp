#include <eventforge/http/frontend.hpp>

#include "actors/order_validation.hpp"
#include "app/http/order_request.hpp"
#include "app/http/server.hpp"
#include "app/page/assets.hpp"
#include "app/page/ops_view.hpp"
#include "app/page/recovery_view.hpp"
#include "app/page/scenarios.hpp"
#include "kafka/offsets.hpp"
#include "messages/ids.hpp"
#include "messages/text.hpp"
#include "persistence/dsn.hpp"
#include "persistence/ops_queries.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/config/options.hpp>
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/dlq_messages.hpp>
#include <eventforge/messages/order_messages.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <type_traits>

#include <sys/resource.h>

namespace ef::app {

namespace {

using json = nlohmann::json;
using http::request;
using http::responder;
using http::response;

bool is_hex(const std::string& s, size_t from, size_t n) {
  for (size_t i = from; i < from + n; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i])))
      return false;
  return true;
}

/// Continues the caller's W3C trace context, or starts a new trace.
std::string traceparent_of(const request& req) {
  auto* h = req.header("traceparent");
  auto tp = h ? *h : std::string{};
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

/// What a request may have written, for the answer to a failure whose
/// outcome the front cannot know itself (docs/api-contract.md).
enum class writes {
  nothing,  ///< a read
  create,   ///< POST /orders: a keyed retry settles it
  cancel,   ///< POST /orders/{id}/cancel: reading the order settles it
  dlq_verb, ///< admin replay or discard: reading the entry settles it
};

/// The client's way to learn what happened, for an unknown outcome.
std::string settle_hint(writes w) {
  switch (w) {
  case writes::nothing:
    break;
  case writes::create:
    return "retry with the same Idempotency-Key: it returns the order if it "
           "was created, and creates it once if not (without a key, a retry "
           "may create a second order)";
  case writes::cancel:
    return "GET /orders/{id} shows whether the cancel was recorded (an "
           "OrderCancelled event); a second cancel answers 409 if it was";
  case writes::dlq_verb:
    return "GET /admin/dlq/{id} shows the entry's status";
  }
  return "retry";
}

/// 503 whose body says, as a fact, that nothing was written.
response not_written(const std::string& message, const std::string& field) {
  nlohmann::json body{{"error", message}, {"written", false}};
  if (!field.empty())
    body["field"] = field;
  auto r = response::json(503, body.dump());
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

/// 503 whose body says the outcome is unknown, and how to settle it.
response outcome_unknown(const std::string& message, writes w) {
  nlohmann::json body{{"error", message + "; " + settle_hint(w)},
                      {"outcome", "unknown"}};
  auto r = response::json(503, body.dump());
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

/// Maps an error reply of the tree to an HTTP response. Every 5xx says
/// whether something was written: "written": false when the tree knows
/// nothing was, "outcome": "unknown" otherwise. An internal error is 500
/// with a stable code and no internal detail (the cause is in the log).
response error_response(const caf::error& err, writes w,
                        std::chrono::milliseconds waited) {
  if (err.category() != api_error_category()) {
    // No answer in time, or the actor holding the command stopped: the
    // front cannot know whether it was written (unless it writes nothing).
    auto why = err == caf::sec::request_timeout
                 ? "no answer within " + std::to_string(waited.count()) + " ms"
                 : std::string("the actor holding the request stopped");
    if (w == writes::nothing)
      return not_written("service unavailable (" + why + "); retry", "");
    return outcome_unknown(why + "; the outcome is unknown", w);
  }
  std::string field, message;
  auto& ctx = err.context();
  if (ctx.match_elements<std::string, std::string>()) {
    field = ctx.get_as<std::string>(0);
    message = ctx.get_as<std::string>(1);
  }
  switch (static_cast<api_errc>(err.code())) {
  case api_errc::invalid:
    return response::error(400, message, field);
  case api_errc::not_found:
    return response::error(404, message, field);
  case api_errc::conflict:
    return response::error(409, message, field);
  case api_errc::unavailable:
    return not_written(message, field);
  case api_errc::outcome_unknown:
    return outcome_unknown(message, w);
  case api_errc::internal:
  case api_errc::none: // not sent: an error with code 0 is none
    break;
  }
  nlohmann::json body{{"error", "internal error; nothing was written"},
                      {"code", "internal"},
                      {"written", false}};
  return response::json(500, body.dump());
}

std::int64_t unix_ms_in(std::chrono::milliseconds from_now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           (std::chrono::system_clock::now() + from_now).time_since_epoch())
    .count();
}

/// How much longer than its deadline the front waits for a command's
/// answer: an API worker that cannot commit it in time rolls it back and
/// says so, and that answer needs a moment to arrive. Past this, the front
/// answers "outcome unknown" (only a COMMIT started before the deadline can
/// still be running).
constexpr std::chrono::milliseconds answer_grace{2000};

} // namespace

struct http_frontend::impl {
  caf::actor_system& sys;
  eventforge_actor root;
  config::settings cfg;
  std::shared_ptr<telemetry> metrics;
  endpoints where;
  static constexpr int blocking_limit = 16;
  std::atomic<int> blocking_now{0};
  /// /readyz is computed at most once a second; callers meanwhile get the
  /// last answer (a probe every 100 ms costs one database session a second).
  std::mutex readiness_mtx;
  std::chrono::steady_clock::time_point readiness_at{};
  std::optional<response> readiness_cached;
  std::unique_ptr<http::server> server;
  int port = 0;
  recovery_view view;
  std::unique_ptr<scenario_runner> runner; ///< null: no crash points
  /// /readyz and the recovery page block on the database and the broker:
  /// they run here, never on the I/O threads. At most `blocking_limit`
  /// calls wait or run at once; more are answered 503 at once, so a slow
  /// database cannot pile up requests without bound. Its tasks use `view`
  /// and `runner`: declared after them, it is joined before they go, and
  /// stop() joins it first of all (each task is bounded: a statement
  /// timeout, a cancelled scenario's last request).
  boost::asio::thread_pool blocking{2};

  impl(caf::actor_system& s, eventforge_actor r, const config::settings& c,
       std::shared_ptr<telemetry> m, endpoints w, std::shared_ptr<chaos> f,
       std::function<std::string(const std::string&)> bf)
      : sys(s), root(std::move(r)), cfg(c), metrics(std::move(m)),
        where(bounded(std::move(w), c)),
        view(cfg, where.database_dsn, where.kafka_brokers, metrics) {
    if (bf) {
      broker.run = std::move(bf);
      // "fault ok: brokers 3; down: none"
      auto status = broker.run("status");
      auto at = status.find("brokers ");
      if (at != std::string::npos)
        broker.brokers = std::atoi(status.c_str() + at + 8);
    }
    if (f)
      runner = std::make_unique<scenario_runner>(
        sys, root, cfg, where.database_dsn, where.kafka_brokers, f, broker);
  }

  /// The in-process cluster's fault commands (Kafka scenarios), if any.
  broker_controls broker;

  /// `w` with the database's connect timeout, and a statement timeout of
  /// http.request-timeout-ms for every query the front runs itself (unless
  /// the DSN sets libpq options of its own): a probe, an overview or a
  /// trace gives up when the server is unreachable or a lock holds it,
  /// never hangs.
  static endpoints bounded(endpoints w, const config::settings& c) {
    w.database_dsn = persistence::with_connect_timeout(
      w.database_dsn, c.database.connect_timeout_s);
    if (w.database_dsn.find("options") == std::string::npos)
      w.database_dsn = persistence::with_dsn_param(
        w.database_dsn, "options",
        "-c statement_timeout=" + std::to_string(c.http.request_timeout_ms));
    return w;
  }

  /// True if `host` (a Host header, "name:port") names this server: its
  /// bound port, and its bound address, or for a loopback address any
  /// loopback name. A wildcard address (0.0.0.0, ::) cannot tell its
  /// names: any is taken there, where only the admin token (which a page
  /// of another site cannot send) runs scenarios (demo mode needs loopback).
  bool own_host(const std::string& host) const {
    auto colon = host.rfind(':');
    if (colon == std::string::npos ||
        (host.find(']') != std::string::npos && colon < host.find(']')))
      return false; // no port: never what a browser sends for ours
    auto name = host.substr(0, colon);
    if (host.substr(colon + 1) != std::to_string(port))
      return false;
    auto& bound = cfg.http.host;
    if (bound == "0.0.0.0" || bound == "::" || bound == "[::]")
      return true;
    auto unbracket = [](std::string s) {
      return s.size() > 2 && s.front() == '[' && s.back() == ']'
               ? s.substr(1, s.size() - 2)
               : s;
    };
    if (unbracket(name) == unbracket(bound))
      return true;
    return config::is_loopback(bound) && config::is_loopback(unbracket(name));
  }

  /// Why a request that changes state through the page may not come from
  /// where it does ("" if it may): another site's page (Origin,
  /// Sec-Fetch-Site), or a name of another server resolving to ours (DNS
  /// rebinding: its Host is that name).
  std::string cross_site_refusal(const request& req) const {
    if (auto* site = req.header("Sec-Fetch-Site");
        site && *site != "same-origin" && *site != "none")
      return "a request from another site (Sec-Fetch-Site: " +
             printable(*site) + ")";
    auto* host = req.header("Host");
    if (!host)
      return "a request without a Host header";
    if (!own_host(*host))
      return "Host " + printable(*host) + " is not this server (" +
             cfg.http.host + ":" + std::to_string(port) + ")";
    if (auto* origin = req.header("Origin");
        origin && *origin != "http://" + *host)
      return "a request from another site (Origin " + printable(*origin) +
             ", this server is http://" + printable(*host) + ")";
    return {};
  }

  /// Why this request may not run a scenario ("" if it may): they place
  /// orders and crash actors on purpose, so they need demo.enabled or the
  /// admin token.
  std::string scenario_refusal(const request& req) {
    if (!runner)
      return "this process hosts no crash points";
    if (cfg.demo.enabled)
      return "";
    if (!cfg.http.admin_token.empty() && req.header("Authorization") &&
        std::holds_alternative<std::string>(authorize(req)))
      return "";
    return "start with demo.enabled=true (scripts/serve.sh does, on "
           "loopback) or send the admin token";
  }

  /// Sends `cmd` to the tree; the reply (or the error, or the timeout)
  /// completes the request from the asking actor's thread. No HTTP thread
  /// waits for the tree. A command that writes carries its deadline
  /// (now + http.request-timeout-ms): the tree writes it by then or not at
  /// all, and the front waits answer_grace longer for the tree to say
  /// which.
  template <class Reply, class Command, class OnReply>
  void ask(Command cmd, responder done, OnReply on_reply,
           writes w = writes::nothing) {
    auto limit = std::chrono::milliseconds(cfg.http.request_timeout_ms);
    auto timeout = limit;
    if constexpr (std::is_same_v<Command, create_order> ||
                  std::is_same_v<Command, cancel_order>) {
      cmd.deadline_unix_ms = unix_ms_in(limit);
      timeout += answer_grace;
    }
    // The root goes in as a spawn argument: CAF 0.17 binds a reference to a
    // null argument tuple for an actor spawned without any (undefined
    // behaviour that UBSan reports).
    sys.spawn(
      [timeout, w, cmd = std::move(cmd), done, on_reply](
        caf::event_based_actor* self, const eventforge_actor& r) mutable {
        self->request(r, timeout, std::move(cmd))
          .then(
            [=](Reply& reply) { done(on_reply(reply)); },
            [=](caf::error& err) { done(error_response(err, w, timeout)); });
      },
      root);
  }

  void blocking_call(responder done, std::function<response()> work) {
    if (++blocking_now > blocking_limit) {
      --blocking_now;
      metrics->add("http_blocking_refused_total", {});
      auto r = response::error(503, "too many requests wait for the "
                                    "database or the broker; retry");
      r.headers.emplace_back("Retry-After", "1");
      return done(std::move(r));
    }
    boost::asio::post(blocking, [this, done, work = std::move(work)] {
      try {
        done(work());
      } catch (const std::exception& e) {
        ef::log::warn("http: {}", e.what());
        done(response::error(503, "service unavailable"));
      }
      --blocking_now;
    });
  }

  /// Checks the bearer token of an admin request; on success returns the
  /// token's name (recorded with the action), else the refusal.
  std::variant<std::string, response> authorize(const request& req) {
    auto& configured = cfg.http.admin_token;
    if (configured.empty())
      return response::error(404, "admin endpoints are off (set "
                                  "http.admin-token)");
    auto colon = configured.find(':');
    auto name = colon == std::string::npos ? std::string("admin")
                                           : configured.substr(0, colon);
    auto secret =
      colon == std::string::npos ? configured : configured.substr(colon + 1);
    auto* auth = req.header("Authorization");
    if (!auth || auth->rfind("Bearer ", 0) != 0) {
      auto r =
        response::error(401, "a bearer token is required", "Authorization");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return r;
    }
    auto given = auth->substr(7);
    // Compare in constant time: the length is not secret, the bytes are.
    unsigned char diff = given.size() == secret.size() ? 0 : 1;
    for (size_t i = 0; i < given.size() && i < secret.size(); ++i)
      diff |= static_cast<unsigned char>(given[i] ^ secret[i]);
    if (diff != 0)
      return response::error(403, "the bearer token is not valid",
                             "Authorization");
    return "token:" + name;
  }

  void admin(const request& req, responder done, dlq_command cmd) {
    auto who = authorize(req);
    if (auto* refused = std::get_if<response>(&who))
      return done(std::move(*refused));
    cmd.actor = std::get<std::string>(who);
    auto w = cmd.verb == dlq_verb::replay || cmd.verb == dlq_verb::discard
               ? writes::dlq_verb
               : writes::nothing;
    ask<dlq_reply>(
      std::move(cmd), done,
      [](dlq_reply& r) { return response::json(200, r.json); }, w);
  }

  /// A DLQ entry id in a path: a positive integer, else 404.
  static std::optional<std::int64_t> entry_id(const request& req) {
    auto& text = req.params.at("id");
    if (text.empty() || text.size() > 18)
      return std::nullopt;
    std::int64_t id = 0;
    for (char c : text) {
      if (c < '0' || c > '9')
        return std::nullopt;
      id = id * 10 + (c - '0');
    }
    return id > 0 ? std::optional<std::int64_t>{id} : std::nullopt;
  }

  /// The telemetry as it stands: counters and histograms are live, the
  /// gauges read from the database and the broker are the gauge sampler's
  /// last sample (actors/gauge_sampler.hpp). No scrape queries either.
  response metrics_page() {
    response r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = metrics->render_prometheus();
    return r;
  }

  /// The last readiness answer if it is younger than a second, else a new
  /// one (one caller computes it; the others wait for it).
  response cached_readiness() {
    std::lock_guard<std::mutex> guard{readiness_mtx};
    auto now = std::chrono::steady_clock::now();
    if (!readiness_cached || now - readiness_at >= std::chrono::seconds(1)) {
      readiness_cached = readiness();
      readiness_at = std::chrono::steady_clock::now();
    }
    return *readiness_cached;
  }

  response readiness() {
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
      kafka::log_end_offsets(kafka::cluster_of(cfg, where.kafka_brokers),
                             cfg.kafka.topic, cfg.kafka.partitions,
                             cfg.database.connect_timeout_s * 1000);
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
    std::vector<std::string> waiting;
    for (auto& [key, value] : metrics->positive_gauges("actors_down")) {
      auto from = key.find('"') + 1;
      waiting.push_back(key.substr(from, key.rfind('"') - from));
    }
    body["actors"] = waiting.empty() ? json("ok") : json(waiting);
    ready = ready && waiting.empty();
    // New clients are turned away (or wait in the backlog) while the
    // listener is saturated: not ready for more load.
    auto saturated = server ? server->saturation() : std::string{};
    body["http"] = saturated.empty() ? json("ok") : json(saturated);
    ready = ready && saturated.empty();
    body["ready"] = ready;
    return response::json(ready ? 200 : 503, body.dump());
  }

  /// Every route, once: method, pattern (also the metric label), handler.
  http::router routes() {
    http::router r;
    r.add({"POST", "/orders", [this](request& req, responder done) {
             auto key = req.header("Idempotency-Key");
             auto type = req.header("Content-Type");
             auto parsed = http::parse_order(
               {type ? *type : "", std::move(req.body),
                key ? std::optional<std::string>{*key} : std::nullopt});
             if (auto* refused = std::get_if<http::refusal>(&parsed))
               return done(response::error(refused->status, refused->message,
                                           refused->field));
             auto cmd = std::get<create_order>(std::move(parsed));
             cmd.traceparent = traceparent_of(req);
             ask<order_accepted>(
               std::move(cmd), done,
               [](order_accepted& a) {
                 auto res = response::json(201, json{{"order_id", a.order_id},
                                                     {"event_id", a.event_id},
                                                     {"status", a.status}}
                                                  .dump());
                 if (a.replayed)
                   res.headers.emplace_back("Idempotent-Replayed", "true");
                 return res;
               },
               writes::create);
           }});
    // A cancel carries no body (none is needed; RFC 9112 allows none).
    r.add(
      {"POST", "/orders/{id}/cancel", [this](request& req, responder done) {
         auto& id = req.params.at("id");
         if (!is_uuid(id))
           return done(response::error(404, "no such order", "order_id"));
         ask<cancel_accepted>(
           cancel_order{id, traceparent_of(req)}, done,
           [](cancel_accepted& a) {
             return response::json(
               202,
               json{{"order_id", a.order_id}, {"event_id", a.event_id}}.dump());
           },
           writes::cancel);
       }});
    r.add({"GET", "/orders/{id}", [this](request& req, responder done) {
             auto& id = req.params.at("id");
             if (!is_uuid(id))
               return done(response::error(404, "no such order", "order_id"));
             ask<order_view>(get_order{id}, done, [](order_view& v) {
               return response::json(200, v.json);
             });
           }});
    r.add({"GET", "/admin/dlq", [this](request& req, responder done) {
             auto status = req.query_param("status").value_or("");
             if (status != "" &&
                 std::none_of(std::begin(dlq_status::all),
                              std::end(dlq_status::all),
                              [&](const char* s) { return status == s; }))
               return done(response::error(
                 400, "must be parked, replaying, replayed or discarded",
                 "status"));
             admin(req, done, {dlq_verb::list, 0, status, ""});
           }});
    r.add({"GET", "/admin/dlq/groups", [this](request& req, responder done) {
             admin(req, done, {dlq_verb::groups, 0, "", ""});
           }});
    for (auto [method, suffix, verb] :
         {std::tuple{"GET", "", dlq_verb::show},
          {"POST", "/replay", dlq_verb::replay},
          {"POST", "/discard", dlq_verb::discard}})
      r.add({method, std::string("/admin/dlq/{id}") + suffix,
             [this, verb = verb](request& req, responder done) {
               auto id = entry_id(req);
               if (!id)
                 return done(response::error(404, "no such DLQ entry", "id"));
               admin(req, done, {verb, *id, "", ""});
             }});
    for (auto& asset : page_assets())
      r.add(
        {"GET", std::string(asset.path), [&asset](request&, responder done) {
           response res;
           res.content_type = std::string(asset.content_type);
           res.body = std::string(asset.body);
           res.headers.emplace_back("Cache-Control", "no-cache");
           done(std::move(res));
         }});
    r.add({"GET", "/overview", [this](request& req, responder done) {
             auto refusal = scenario_refusal(req);
             blocking_call(done, [this, refusal] {
               auto body = view.overview();
               body["scenarios_allowed"] = refusal.empty();
               body["readonly_reason"] = refusal;
               return response::json(200, body.dump());
             });
           }});
    r.add({"GET", "/scenarios", [this](request& req, responder done) {
             auto refusal = scenario_refusal(req);
             json list = json::array();
             for (auto& s : scenarios())
               if (unavailable(s, broker).empty())
                 list.push_back({{"name", s.name},
                                 {"title", s.title},
                                 {"point", s.point ? to_string(*s.point) : ""},
                                 {"explain", s.explain},
                                 {"expect",
                                  {{"logical_events", 1},
                                   {"deliveries", s.deliveries},
                                   {"business_changes", s.business_changes}}}});
             done(response::json(200, json{{"allowed", refusal.empty()},
                                           {"readonly_reason", refusal},
                                           {"scenarios", list}}
                                        .dump()));
           }});
    r.add({"POST", "/scenarios/{name}", [this](request& req, responder done) {
             auto* s = find_scenario(req.params.at("name"));
             if (!s)
               return done(response::error(404, "no such scenario", "name"));
             auto refusal = scenario_refusal(req);
             if (!refusal.empty())
               return done(
                 response::error(403, "scenario runs are off: " + refusal));
             if (auto cross = cross_site_refusal(req); !cross.empty())
               return done(response::error(
                 403, "scenario refused: " + cross + "; nothing was run",
                 "Origin"));
             blocking_call(done, [this, s] {
               auto started = runner->start(*s);
               if (auto* busy = std::get_if<scenario_refused>(&started))
                 return response::error(409, busy->why, "name");
               if (auto* why = std::get_if<std::string>(&started))
                 return response::error(503, *why);
               auto& run = std::get<scenario_run>(started);
               return response::json(202, json{{"scenario", s->name},
                                               {"order_id", run.order_id},
                                               {"trace_id", run.trace_id}}
                                            .dump());
             });
           }});
    r.add({"GET", "/orders/{id}/trace", [this](request& req, responder done) {
             auto id = req.params.at("id");
             if (!is_uuid(id))
               return done(response::error(404, "no such order", "order_id"));
             blocking_call(done, [this, id] {
               auto t = view.trace(id);
               if (!t)
                 return response::error(404, "no such order", "order_id");
               return response::json(200, t->dump());
             });
           }});
    r.add({"GET", "/metrics", [this](request&, responder done) {
             done(metrics_page()); // renders memory only: no blocking
           }});
    r.add({"GET", "/readyz", [this](request&, responder done) {
             blocking_call(done, [this] { return cached_readiness(); });
           }});
    r.add({"GET", "/healthz", [](request&, responder done) {
             done(response::json(200, R"({"status":"ok"})"));
           }});
    return r;
  }
};

namespace {

/// `cfg`, if it passes the CLI's checks (a host builds it in code).
const config::settings& checked(const config::settings& cfg) {
  if (auto err = config::check_settings(cfg))
    throw std::invalid_argument(*err);
  return cfg;
}

} // namespace

http_frontend::http_frontend(
  caf::actor_system& sys, eventforge_actor root, const config::settings& cfg,
  std::shared_ptr<telemetry> metrics, endpoints where,
  std::shared_ptr<chaos> faults,
  std::function<std::string(const std::string&)> broker_faults)
    : impl_(std::make_unique<impl>(
        sys, std::move(root), checked(cfg),
        metrics ? std::move(metrics) : std::make_shared<telemetry>(),
        std::move(where), std::move(faults), std::move(broker_faults))) {
  // nop
}

http_frontend::~http_frontend() {
  stop();
}

namespace {

/// Descriptors the process holds now (its open files, sockets and pipes).
long open_descriptors() {
  long n = 0;
  std::error_code ec;
  for (auto i = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && i != std::filesystem::directory_iterator(); i.increment(ec))
    ++n;
  return n;
}

/// Descriptors kept free for what the process opens after start: database
/// reconnections, Kafka clients of the overview, the journal, log files.
constexpr long descriptor_headroom = 64;

/// Makes sure http.max-connections fits in RLIMIT_NOFILE next to what the
/// process already holds, raising the soft limit up to the hard one if it
/// must; throws, naming both numbers, if it cannot.
void check_descriptor_limit(int max_connections) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return;
  auto held = open_descriptors();
  auto needed =
    static_cast<rlim_t>(max_connections + held + descriptor_headroom);
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < needed) {
    auto raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY
                        ? needed
                        : std::min<rlim_t>(needed, lim.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0 && raised.rlim_cur >= needed) {
      ef::log::info("http: raised RLIMIT_NOFILE from {} to {} for "
                    "http.max-connections {}",
                    lim.rlim_cur, raised.rlim_cur, max_connections);
      return;
    }
    throw std::runtime_error(
      "http.max-connections (" + std::to_string(max_connections) + ") plus " +
      std::to_string(held) + " descriptors already open plus " +
      std::to_string(descriptor_headroom) +
      " kept free exceeds RLIMIT_NOFILE (" + std::to_string(lim.rlim_cur) +
      ", hard limit " +
      (lim.rlim_max == RLIM_INFINITY ? std::string("unlimited")
                                     : std::to_string(lim.rlim_max)) +
      "): lower http.max-connections to at most " +
      std::to_string(std::max<long>(
        0, static_cast<long>(lim.rlim_max == RLIM_INFINITY ? lim.rlim_cur
                                                           : lim.rlim_max) -
             held - descriptor_headroom)) +
      " or raise the limit (ulimit -n)");
  }
}

const char* const accept_error_names[] = {"EMFILE", "ENFILE",       "ENOBUFS",
                                          "ENOMEM", "ECONNABORTED", "EPERM",
                                          "EPROTO", "other"};

} // namespace

int http_frontend::start() {
  auto& c = impl_->cfg.http;
  check_descriptor_limit(c.max_connections);
  http::server_limits limits;
  limits.max_body_bytes = static_cast<size_t>(c.max_body_bytes);
  limits.max_header_bytes = static_cast<size_t>(c.max_header_bytes);
  limits.header_timeout = std::chrono::milliseconds(c.header_timeout_ms);
  limits.body_timeout = std::chrono::milliseconds(c.header_timeout_ms);
  limits.idle_timeout = std::chrono::milliseconds(c.idle_timeout_ms);
  limits.threads = c.threads;
  limits.max_connections = static_cast<size_t>(c.max_connections);
  auto metrics = impl_->metrics;
  auto routes = impl_->routes();
  for (auto& label : routes.labels()) {
    for (auto status : {"2xx", "4xx", "5xx"})
      metrics->declare("http_requests_total",
                       {{"route", label}, {"status", status}});
    metrics->declare("http_request_duration_seconds", {{"route", label}});
  }
  for (auto name : accept_error_names)
    metrics->declare("http_accept_errors_total", {{"error", name}});
  metrics->declare("http_connections_rejected_total");
  metrics->declare("http_blocking_refused_total");
  metrics->set("http_open_connections", {}, 0);
  http::server_events events;
  events.response = [metrics](const std::string& route, int status,
                              double seconds) {
    metrics->add(
      "http_requests_total",
      {{"route", route}, {"status", std::to_string(status / 100) + "xx"}});
    metrics->observe("http_request_duration_seconds", {{"route", route}},
                     seconds);
  };
  events.accept_error = [metrics](const std::string& name) {
    metrics->add("http_accept_errors_total", {{"error", name}});
  };
  events.rejected = [metrics] {
    metrics->add("http_connections_rejected_total", {});
  };
  events.open_connections = [metrics](size_t n) {
    metrics->set("http_open_connections", {}, static_cast<double>(n));
  };
  impl_->server =
    std::make_unique<http::server>(std::move(routes), limits, events);
  impl_->port = impl_->server->start(c.host, c.port);
  return impl_->port;
}

void http_frontend::stop() {
  if (impl_->server)
    impl_->server->stop();
  impl_->server.reset();
  // No new request comes in; what runs on the pool ends before anything it
  // uses goes (a trace waiting on a lock until its statement timeout, a
  // scenario placing its order). Work not started is dropped: its
  // connection is gone with the server.
  if (impl_->runner)
    impl_->runner->cancel();
  impl_->blocking.stop();
  impl_->blocking.join();
}

std::string http_frontend::url() const {
  return "http://" + impl_->cfg.http.host + ":" + std::to_string(impl_->port);
}

} // namespace ef::app
