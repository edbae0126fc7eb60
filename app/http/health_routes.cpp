// The routes of operators and orchestrators: /metrics, /readyz (the
// database, the broker, the actors, the listener; computed at most once a
// second) and /healthz.

#include "app/http/frontend_impl.hpp"
#include "app/page/ops_view.hpp"
#include "kafka/offsets.hpp"
#include "persistence/ops_queries.hpp"
#include "persistence/repair_store.hpp"

#include <nlohmann/json.hpp>

namespace ef::app {

using json = nlohmann::json;

/// The telemetry as it stands: counters and histograms are live, the
/// gauges read from the database and the broker are the gauge sampler's
/// last sample (actors/gauge_sampler.hpp). No scrape queries either.
void http_frontend::impl::metrics_route(request&, responder done) {
  response r; // renders memory only: no blocking
  r.content_type = "text/plain; version=0.0.4";
  r.body = metrics->render_prometheus();
  done(std::move(r));
}

void http_frontend::impl::readyz_route(request&, responder done) {
  blocking_call(done, [this] { return cached_readiness(); });
}

void http_frontend::impl::healthz_route(request&, responder done) {
  done(response::json(200, R"({"status":"ok"})"));
}

http::response http_frontend::impl::cached_readiness() {
  std::lock_guard<std::mutex> guard{readiness_mtx};
  auto now = std::chrono::steady_clock::now();
  if (!readiness_cached || now - readiness_at >= std::chrono::seconds(1)) {
    readiness_cached = readiness();
    readiness_at = std::chrono::steady_clock::now();
  }
  return *readiness_cached;
}

http::response http_frontend::impl::readiness() {
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

} // namespace ef::app
