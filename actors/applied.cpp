#include <eventforge/actors/applied.hpp>

#include "kafka/offsets.hpp"
#include "persistence/invariant_queries.hpp"

#include <thread>

namespace ef {

std::string applied_gap(const config::settings& cfg, const endpoints& where) {
  auto c = persistence::read_counts(where.database_dsn);
  auto consumers = static_cast<long>(cfg.consumer.enabled.size());
  if (c.unsent != 0)
    return "outbox: " + std::to_string(c.unsent) + " unsent";
  if (c.marks < consumers * c.events)
    return "processed_events: " + std::to_string(c.marks) + " marks of " +
           std::to_string(consumers * c.events);
  // Offsets are committed after the marks: read them last.
  auto cluster = kafka::cluster_of(cfg, where.kafka_brokers);
  auto ends =
    kafka::log_end_offsets(cluster, cfg.kafka.topic, cfg.kafka.partitions);
  for (auto& name : cfg.consumer.enabled) {
    auto committed = kafka::committed_offsets(
      cluster, "eventforge." + name, cfg.kafka.topic, cfg.kafka.partitions);
    // A partition that never received a record has no commit (-1).
    for (size_t p = 0; p < ends.size(); ++p)
      if (ends[p] > 0 && committed[p] != ends[p])
        return name + ": partition " + std::to_string(p) + " committed " +
               std::to_string(committed[p]) + " of log end " +
               std::to_string(ends[p]);
  }
  return {};
}

applied_wait await_applied(const config::settings& cfg, const endpoints& where,
                           std::chrono::milliseconds timeout,
                           std::chrono::milliseconds every) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  applied_wait out;
  for (;;) {
    out.gap = applied_gap(cfg, where);
    if (out.gap.empty()) {
      out.applied = true;
      return out;
    }
    if (std::chrono::steady_clock::now() + every > deadline)
      return out;
    std::this_thread::sleep_for(every);
  }
}

} // namespace ef
