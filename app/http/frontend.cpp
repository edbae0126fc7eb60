// The HTTP front's life: its state built from the configuration, the
// server started with the route table (routes.cpp) and its metrics
// declared, the blocking pool, and the stop. The routes' handlers and the
// checks they make are in the files frontend_impl.hpp names.

#include "app/http/descriptor_limit.hpp"
#include "app/http/frontend_impl.hpp"
#include "persistence/dsn.hpp"
#include <eventforge/config/options.hpp>

#include <boost/asio/post.hpp>

#include <stdexcept>

namespace ef::app {

http_frontend::impl::impl(caf::actor_system& s, eventforge_actor r,
                          const config::settings& c,
                          std::shared_ptr<telemetry> m, endpoints w,
                          std::shared_ptr<chaos> f,
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

endpoints http_frontend::impl::bounded(endpoints w, const config::settings& c) {
  w.database_dsn = persistence::with_connect_timeout(
    w.database_dsn, c.database.connect_timeout_s);
  if (w.database_dsn.find("options") == std::string::npos)
    w.database_dsn = persistence::with_dsn_param(
      w.database_dsn, "options",
      "-c statement_timeout=" + std::to_string(c.http.request_timeout_ms));
  return w;
}

void http_frontend::impl::blocking_call(responder done,
                                        std::function<response()> work) {
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

namespace {

/// `cfg` with the files it names read, if it passes the CLI's checks (a
/// host builds it in code; its admin token may be in a file).
config::settings checked(const config::settings& cfg) {
  auto read = config::with_referenced_files(cfg);
  if (auto err = config::check_settings(read))
    throw std::invalid_argument(*err);
  return read;
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

const char* const accept_error_names[] = {"EMFILE", "ENFILE",       "ENOBUFS",
                                          "ENOMEM", "ECONNABORTED", "EPERM",
                                          "EPROTO", "other"};

} // namespace

int http_frontend::start() {
  auto& c = impl_->cfg.http;
  http::check_descriptor_limit(c.max_connections);
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
  impl_->readiness_lane.join(); // one bounded probe at most
}

std::string http_frontend::url() const {
  return "http://" + impl_->cfg.http.host + ":" + std::to_string(impl_->port);
}

} // namespace ef::app
