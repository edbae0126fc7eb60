// The routes of operators and orchestrators: /metrics, /readyz (the
// database, the brokers and groups as the Kafka clients report them, the
// actors, the listener; computed at most once a second, on a lane of its
// own) and /healthz.

#include "app/http/frontend_impl.hpp"
#include "app/page/ops_view.hpp"
#include "kafka/client_health.hpp"
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

/// Its own lane and a cached answer: /readyz never waits in the blocking
/// pool's queue (slow page and trace reads can fill it), and while an
/// answer is being computed, a caller gets the last one at once.
void http_frontend::impl::readyz_route(request&, responder done) {
  {
    std::lock_guard<std::mutex> guard{readiness_mtx};
    auto now = std::chrono::steady_clock::now();
    bool fresh =
      readiness_cached && now - readiness_at < std::chrono::seconds(1);
    if (fresh || (readiness_computing && readiness_cached))
      return done(*readiness_cached);
    readiness_waiters.push_back(std::move(done));
    if (readiness_computing)
      return; // the first answer is on its way
    readiness_computing = true;
  }
  boost::asio::post(readiness_lane, [this] {
    http::response r;
    try {
      r = readiness();
    } catch (const std::exception& e) {
      r = response::error(503, std::string("readiness: ") + e.what());
    }
    std::vector<responder> waiting;
    {
      std::lock_guard<std::mutex> guard{readiness_mtx};
      readiness_cached = r;
      readiness_at = std::chrono::steady_clock::now();
      readiness_computing = false;
      waiting.swap(readiness_waiters);
    }
    for (auto& w : waiting)
      w(r);
  });
}

void http_frontend::impl::healthz_route(request&, responder done) {
  done(response::json(200, R"({"status":"ok"})"));
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
  std::vector<std::string> degraded;
  ready = kafka_readiness(body, degraded) && ready;
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
  body["degraded"] = degraded;
  return response::json(ready ? 200 : 503, body.dump());
}

bool http_frontend::impl::kafka_readiness(json& body,
                                          std::vector<std::string>& degraded) {
  // What the clients' own statistics say (kafka.statistics-interval-ms),
  // without a client of its own; a probe only when there are none (off, or
  // before the first report).
  auto fresh = std::chrono::milliseconds(3 * cfg.kafka.statistics_interval_ms);
  auto clients = kafka::client_health::process().clients(fresh);
  if (cfg.kafka.statistics_interval_ms <= 0 || clients.empty()) {
    try {
      kafka::log_end_offsets(kafka::cluster_of(cfg, where.kafka_brokers),
                             cfg.kafka.topic, cfg.kafka.partitions,
                             cfg.database.connect_timeout_s * 1000);
      body["broker"] = "ok";
      return true;
    } catch (const std::exception& e) {
      body["broker"] = e.what();
      return false;
    }
  }
  auto reach = kafka::client_health::process().reachability(
    std::max(fresh, std::chrono::milliseconds(10000)));
  auto down = kafka::brokers_down(clients, reach);
  json brokers = json::object();
  for (auto& [id, yes] : reach)
    brokers[std::to_string(id)] = down.count(id) ? "down" : "up";
  for (auto& c : clients)
    for (auto& b : c.brokers)
      if (!b.idle() && !brokers.contains(std::to_string(b.id)))
        brokers[std::to_string(b.id)] = down.count(b.id) ? "down" : "up";
  body["brokers"] = brokers;
  std::string names;
  for (auto id : down)
    names += (names.empty() ? "" : ", ") + std::to_string(id);
  // Serving needs one broker: all down is not ready, some down is ready
  // but degraded (librdkafka moves to the leaders that remain).
  bool none = !brokers.empty() && down.size() == brokers.size();
  body["broker"] =
    none ? "no broker is reachable (down: " + names + ")" : std::string("ok");
  if (!none && !down.empty())
    degraded.push_back("broker" + std::string(down.size() > 1 ? "s " : " ") +
                       names + " down");
  json groups = json::object();
  for (auto& c : clients) {
    if (!c.in_group)
      continue;
    groups[c.role] = {{"state", c.group_state},
                      {"coordinator", c.coordinator_up ? "up" : "down"},
                      {"assigned_partitions", c.assigned}};
    if (c.group_state != "up" || !c.coordinator_up)
      degraded.push_back("group " + c.role + ": " + c.group_state +
                         (c.coordinator_up ? "" : ", no coordinator"));
  }
  body["groups"] = groups;
  auto errors = json::array();
  for (auto& e :
       kafka::client_health::process().recent_errors(std::chrono::minutes(1)))
    errors.push_back(
      {{"client", e.role}, {"error", e.name}, {"reason", e.reason}});
  body["kafka_errors"] = errors;
  return !none;
}

} // namespace ef::app
