#include "actors/kafka_health.hpp"

#include "actors/crash_log.hpp"
#include "actors/round_loop.hpp"
#include "actors/thread_name.hpp"

#include <algorithm>
#include <map>

namespace ef {

namespace {

/// One series' value, by (name, labels): combined over the clients of a
/// role as the series says (max, min or sum).
class round_values {
public:
  void max(const std::string& n, const telemetry::labels& l, double v) {
    auto [i, fresh] = values_.try_emplace({n, l}, v);
    if (!fresh)
      i->second = std::max(i->second, v);
  }
  void min(const std::string& n, const telemetry::labels& l, double v) {
    auto [i, fresh] = values_.try_emplace({n, l}, v);
    if (!fresh)
      i->second = std::min(i->second, v);
  }
  void sum(const std::string& n, const telemetry::labels& l, double v) {
    values_[{n, l}] += v;
  }
  const auto& all() const { return values_; }

private:
  std::map<std::pair<std::string, telemetry::labels>, double> values_;
};

telemetry::labels with_broker(const std::string& role, std::int32_t id) {
  return {{"client", role}, {"broker", std::to_string(id)}};
}

void add_client(const kafka::client_view& c, round_values& out) {
  telemetry::labels role{{"client", c.role}};
  for (auto& b : c.brokers) {
    if (b.idle())
      continue; // librdkafka connects to a broker only while it needs it
    auto l = with_broker(c.role, b.id);
    out.max("kafka_broker_up", l, b.up() ? 1 : 0);
    out.max("kafka_broker_rtt_seconds", l, b.rtt_seconds);
    out.sum("kafka_broker_outstanding_requests", l,
            static_cast<double>(b.outstanding));
  }
  if (c.type == "producer") {
    out.sum("kafka_producer_undelivered_records", role,
            static_cast<double>(c.undelivered));
    out.max("kafka_producer_queue_latency_seconds", role,
            c.queue_latency_seconds);
  }
  if (c.in_group) {
    out.min("kafka_consumer_group_up", role, c.group_state == "up" ? 1 : 0);
    out.min("kafka_consumer_group_coordinator_up", role,
            c.coordinator_up ? 1 : 0);
    out.sum("kafka_consumer_group_assigned_partitions", role,
            static_cast<double>(c.assigned));
  }
}

void add_counts(const kafka::health_counts& counts, telemetry& m) {
  for (auto& [key, n] : counts.errors)
    m.add("kafka_broker_request_errors_total",
          with_broker(key.first, key.second), n);
  for (auto& [key, n] : counts.retries)
    m.add("kafka_broker_request_retries_total",
          with_broker(key.first, key.second), n);
  for (auto& [role, n] : counts.rebalances)
    m.add("kafka_consumer_group_rebalances_total", {{"client", role}}, n);
  for (auto& [topic, n] : counts.leader_changes)
    m.add("kafka_partition_leader_changes_total", {{"topic", topic}}, n);
  for (auto& [key, n] : counts.client_errors)
    m.add("kafka_client_errors_total",
          {{"client", key.first}, {"error", key.second}}, n);
}

} // namespace

std::chrono::milliseconds kafka_health_state::round() {
  auto& m = *ctx->metrics;
  auto interval =
    std::chrono::milliseconds(ctx->cfg.metrics.sample_interval_ms);
  // Statistics come every kafka.statistics-interval-ms: a client that did
  // not report within three of them is gone or hung, and shows nothing.
  auto fresh = std::max(
    std::chrono::milliseconds(3 * ctx->cfg.kafka.statistics_interval_ms),
    3 * interval);
  auto clients = deps.clients(fresh);
  round_values values;
  for (auto& c : clients)
    add_client(c, values);
  // No client may need an idle broker (librdkafka drops a connection it no
  // longer needs, and leaders move away from a broker that went down): each
  // broker the metadata named is tried, so one that is down is named as
  // such whoever needs it.
  auto reachability = deps.probe();
  for (auto& [id, yes] : reachability)
    values.max("kafka_broker_reachable", {{"broker", std::to_string(id)}},
               yes ? 1 : 0);
  values.max(
    "kafka_brokers_down", {},
    static_cast<double>(kafka::brokers_down(clients, reachability).size()));
  std::set<std::pair<std::string, telemetry::labels>> now;
  for (auto& [key, value] : values.all()) {
    m.set(key.first, key.second, value);
    now.insert(key);
  }
  for (auto& gone : shown)
    if (now.count(gone) == 0)
      m.unset(gone.first, gone.second);
  shown = std::move(now);
  add_counts(deps.take(), m);
  return interval;
}

kafka_health_deps production_kafka_health_deps() {
  kafka_health_deps deps;
  deps.clients = [](std::chrono::milliseconds max_age) {
    return kafka::client_health::process().clients(max_age);
  };
  deps.probe = [] {
    auto& health = kafka::client_health::process();
    std::map<std::int32_t, bool> out;
    for (auto& [id, address] : health.broker_addresses()) {
      out[id] = kafka::tcp_reachable(address, std::chrono::milliseconds(500));
      health.reachable(id, out[id]);
    }
    return out;
  };
  deps.take = [] { return kafka::client_health::process().take(); };
  return deps;
}

caf::behavior kafka_health(caf::stateful_actor<kafka_health_state>* self,
                           context_ptr ctx) {
  return kafka_health_with(self, std::move(ctx),
                           production_kafka_health_deps());
}

caf::behavior kafka_health_with(caf::stateful_actor<kafka_health_state>* self,
                                context_ptr ctx, kafka_health_deps deps) {
  log_crashes(self, "kafka health");
  name_blocking_thread(self, "kafka-health");
  self->state.ctx = std::move(ctx);
  self->state.deps = std::move(deps);
  // It only reads: a drained tree still shows its Kafka clients.
  return round_loop(self, on_drain::keep_rounds);
}

} // namespace ef
