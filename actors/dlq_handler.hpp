#pragma once

#include "actors/context.hpp"
#include "actors/dlq_operations.hpp"
#include "kafka/group_consumer.hpp"
#include "messages/tree_messages.hpp"
#include <eventforge/messages/interfaces.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>

namespace ef {

/// What a DLQ handler is built from: its store, the producers of replays
/// and the DLQ topic's consumer (production_dlq_handler_deps), or fakes in
/// deterministic actor tests. All are made when the handler starts.
struct dlq_handler_deps {
  std::function<std::unique_ptr<persistence::dlq_records>()> store;
  dlq_operations::producer_factory producer;
  std::function<std::unique_ptr<kafka::group_client>(
    kafka::group_client::callbacks)>
    consumer;
};

dlq_handler_deps production_dlq_handler_deps(const context_ptr& ctx);

/// Consumes the DLQ topic into dlq_events (deduplicated by consumer + event
/// ID; a late copy never re-parks an entry an operator already decided),
/// committing each offset after the row is stored. Every 5 s it publishes
/// the replays that are due (recorded without a broker, or left
/// "replaying" by a crash or a failed publish), parks again those no
/// broker acknowledged for dlq.replay-give-up-ms, and releases orders whose
/// release failed. Operator commands are the DLQ desks' (dlq_desk.hpp).
/// Blocking, so detached.
struct dlq_handler_state {
  context_ptr ctx;
  std::unique_ptr<dlq_operations> ops;
  std::unique_ptr<kafka::group_client> consumer;
  /// The actor system's clock: the steady clock in production, the test
  /// coordinator's in deterministic tests (time moves only when they say).
  caf::actor_clock* clock = nullptr;
  /// DLQ partitions whose position the broker no longer holds.
  std::map<std::int32_t, std::int64_t> lost;
  caf::actor_clock::time_point lost_since{};
  caf::actor_clock::time_point next_sweep{};

  void poll_once();
  /// Every 5 s (the first time at start): gives up replays no broker
  /// acknowledged for dlq.replay-give-up-ms, publishes and marks the due
  /// ones, releases orphaned orders.
  void sweep_replays();

  static inline const char* name = "dlq-handler";
};

dlq_handler_actor::behavior_type
dlq_handler(dlq_handler_actor::stateful_pointer<dlq_handler_state> self,
            context_ptr ctx);

/// The same actor, built from `deps`.
dlq_handler_actor::behavior_type
dlq_handler_with(dlq_handler_actor::stateful_pointer<dlq_handler_state> self,
                 context_ptr ctx, dlq_handler_deps deps);

} // namespace ef
