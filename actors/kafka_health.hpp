#pragma once

#include "actors/context.hpp"
#include "kafka/client_health.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ef {

/// What the Kafka health sampler reads: the process's client_health
/// (production_kafka_health_deps), or a fake in deterministic actor tests.
struct kafka_health_deps {
  /// The clients that reported within the given age.
  std::function<std::vector<kafka::client_view>(std::chrono::milliseconds)>
    clients;
  /// The counter increments since the last call.
  std::function<kafka::health_counts()> take;
  /// Tries each broker the metadata named: reachable or not, by node id.
  std::function<std::map<std::int32_t, bool>()> probe;
};

kafka_health_deps production_kafka_health_deps();

/// Turns what every Kafka client of the process reports (its statistics,
/// kafka.statistics-interval-ms, and its errors) into series, every
/// metrics.sample-interval-ms, per client role and broker, never per ID:
/// connection state, round trip and requests waiting per broker, request
/// errors and retries, records awaiting a delivery report, group state,
/// coordinator, rebalances and assignments, partition leader changes,
/// client errors; and whether each broker accepts a connection (a TCP
/// connect, 500 ms at most, as no client may need an idle broker). A
/// series nobody reports any more (a client gone, a broker no client uses)
/// is removed, not left at its last value. Connects, so detached.
struct kafka_health_state {
  context_ptr ctx;
  kafka_health_deps deps;
  /// The gauge series set by the last round, to remove those not set again.
  std::set<std::pair<std::string, telemetry::labels>> shown;
  std::chrono::milliseconds round();
  static inline const char* name = "kafka-health";
};

caf::behavior kafka_health(caf::stateful_actor<kafka_health_state>* self,
                           context_ptr ctx);

/// The same actor, built from `deps`.
caf::behavior kafka_health_with(caf::stateful_actor<kafka_health_state>* self,
                                context_ptr ctx, kafka_health_deps deps);

} // namespace ef
