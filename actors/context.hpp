#pragma once

#include "actors/chaos.hpp"
#include "kafka/connection.hpp"
#include "kafka/consumer_lead.hpp"
#include "kafka/lead_limit.hpp"
#include "persistence/outbox_listener.hpp"
#include "persistence/recovery_journal.hpp"
#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>
#include <eventforge/consumers/consumer.hpp>

#include <map>
#include <memory>
#include <string>

namespace ef {

/// What every actor of one EventForge tree shares, immutable after start:
/// settings, where the database and broker are, the telemetry counters, the
/// crash-point decisions, the recovery journal and the enabled consumers.
struct context {
  config::settings cfg;
  std::string dsn; ///< database, with connect_timeout applied
  /// The Kafka cluster: bootstrap servers and every client's properties.
  kafka::connection cluster;
  std::shared_ptr<telemetry> metrics;
  std::shared_ptr<chaos> faults;
  /// Crashes, restarts and suppressed duplicates, written in the background.
  std::shared_ptr<persistence::recovery_journal> journal;
  /// The enabled consumers (cfg.consumer.enabled), by name.
  std::map<std::string, consumer_ptr> consumers;
  /// How far the consumers are behind the log ends, for the relay shards'
  /// relay.max-lead-bytes (one probe for all of them).
  std::shared_ptr<kafka::consumer_lead> lead;
  /// relay.max-lead-bytes as configured or derived from the topic's
  /// retention (one for all relay shards).
  std::shared_ptr<kafka::lead_limit> lead_limit;
  /// The LISTEN session the relay shards of this tree share.
  std::shared_ptr<persistence::listener_slot> outbox_wakeups =
    std::make_shared<persistence::listener_slot>();
};

using context_ptr = std::shared_ptr<const context>;

} // namespace ef
