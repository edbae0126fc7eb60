#pragma once

#include "actors/context.hpp"
#include "config/backoff.hpp"
#include "kafka/broker_probe.hpp"
#include "kafka/outbox_producer.hpp"
#include "persistence/outbox_store.hpp"

#include <caf/all.hpp>

#include <optional>

#include <chrono>
#include <memory>

namespace ef {

/// Relay for one outbox shard. Owns the shard cluster-wide through an
/// advisory lock, then loops: read the oldest unsent rows of the shard,
/// publish them (key = order ID) with an idempotent producer, wait for the
/// delivery reports, mark exactly the acknowledged rows sent. Woken by
/// NOTIFY; polls slowly as a fallback. Blocking, hence detached.
///
/// A crash anywhere leaves unacknowledged or unmarked rows unsent; the
/// restarted relay (or another process's) republishes them. A row acked but
/// not yet marked is therefore published twice: the accepted price.
struct relay_shard_state {
  context_ptr ctx;
  std::unique_ptr<persistence::outbox_store> store;
  std::unique_ptr<kafka::outbox_producer> producer;
  std::unique_ptr<kafka::broker_probe> probe;
  int shard = 0;
  int batch_size = 0;
  std::chrono::milliseconds poll_interval{1000};
  bool owner = false;
  bool notified = true; // query once right after start
  std::chrono::steady_clock::time_point next_query{};
  std::chrono::steady_clock::time_point next_lead_check{};
  std::string lead_block;  ///< why publishing waits; empty: it does not
  double record_bytes = 0; ///< moving average of a published record's size
  /// Waits after a batch the broker refused rows of (relay.publish-backoff-*).
  std::optional<config::backoff> publish_wait;

  /// One step of the loop; returns the delay before the next step.
  std::chrono::milliseconds round();
  /// Whether some partition already holds relay.max-lead-bytes beyond the
  /// slowest enabled consumer's committed offset (checked every 250 ms;
  /// records are counted by the broker, sized by our moving average).
  bool too_far_ahead();
  /// Publishes one batch and marks what was acknowledged; returns false if
  /// some rows failed (the caller backs off).
  bool publish(const std::vector<persistence::outbox_row>& rows);

  static inline const char* name = "relay";
};

caf::behavior relay_shard(caf::stateful_actor<relay_shard_state>* self,
                          context_ptr ctx, int shard);

} // namespace ef
