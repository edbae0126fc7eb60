#pragma once

#include "actors/context.hpp"
#include "messages/events.hpp"
#include "persistence/event_applier.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <deque>
#include <memory>

namespace ef {

/// Applies the records of ONE owned partition, strictly in offset order:
/// each in one idempotent transaction, then tells the group member the
/// record is done (only then may its offset be committed). A record that
/// cannot be applied yet (order missing, database unavailable) is retried
/// with backoff while later records wait behind it. Blocking, so detached.
struct partition_worker_state {
  context_ptr ctx;
  std::unique_ptr<persistence::event_applier> applier;
  caf::actor group_member;
  std::string consumer;
  std::int32_t partition = 0;
  std::deque<partition_record> pending;
  bool waiting_for_retry = false;
  int attempts = 0;

  /// Applies pending records in order until one must wait; returns the
  /// delay before the next retry, or zero when the queue drained.
  std::chrono::milliseconds drain(caf::event_based_actor* self);
  /// Applies one record; false means "not yet, retry later".
  bool apply(const partition_record& rec);

  static inline const char* name = "partition";
};

caf::behavior
partition_worker(caf::stateful_actor<partition_worker_state>* self,
                 context_ptr ctx, std::string consumer, std::int32_t partition,
                 caf::actor group_member);

} // namespace ef
