#pragma once

#include "actors/context.hpp"
#include "actors/dlq_operations.hpp"
#include "kafka/group_consumer.hpp"
#include "messages/tree_messages.hpp"
#include <eventforge/messages/interfaces.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <map>
#include <memory>

namespace ef {

/// Consumes the DLQ topic into dlq_events (deduplicated by consumer + event
/// ID; a late copy never re-parks an entry an operator already replayed),
/// committing each offset after the row is stored. Executes operator
/// commands (list, groups, show, replay, discard). Once a second it
/// finishes replays left "replaying" by a crash or a failed publish
/// (dlq_operations::sweep_replays). Blocking, so detached.
struct dlq_handler_state {
  context_ptr ctx;
  std::unique_ptr<dlq_operations> ops;
  std::unique_ptr<kafka::group_consumer> consumer;
  /// DLQ partitions whose position the broker no longer holds.
  std::map<std::int32_t, std::int64_t> lost;
  std::chrono::steady_clock::time_point lost_since{};
  std::chrono::steady_clock::time_point next_sweep{};

  void poll_once();
  /// Once a second: republishes and marks replays older than their
  /// delivery timeout that are still "replaying".
  void sweep_replays();
  caf::result<dlq_reply> execute(const dlq_command& cmd);

  static inline const char* name = "dlq-handler";
};

dlq_handler_actor::behavior_type
dlq_handler(dlq_handler_actor::stateful_pointer<dlq_handler_state> self,
            context_ptr ctx);

} // namespace ef
