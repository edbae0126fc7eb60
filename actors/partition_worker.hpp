#pragma once

#include "actors/context.hpp"
#include "actors/delivery.hpp"
#include "actors/delivery_notes.hpp"
#include "actors/parking.hpp"
#include "actors/partition_faults.hpp"
#include "actors/retry_budget.hpp"
#include "applier/event_applier.hpp"
#include "messages/tree_messages.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

namespace ef {

/// What a partition actor is built from: the production event applier and
/// DLQ parking (production_partition_worker_deps), or fakes in
/// deterministic actor tests.
struct partition_worker_deps {
  std::function<std::unique_ptr<event_sink>()> sink;
  std::function<std::unique_ptr<parking>(const partition_faults&)> dlq;
};

partition_worker_deps production_partition_worker_deps(
  const context_ptr& ctx, const std::string& consumer, std::int32_t partition);

/// Applies the records of ONE owned partition, strictly in offset order:
/// consecutive plain records share one transaction (each behind its own
/// idempotency mark), then the group member is told each record is done
/// (only then may its offset be committed). A failed batch falls back to
/// one record per transaction, so the rules below apply to a single record.
///
/// A transient failure is retried inline with config::backoff
/// (consumer.backoff-*), up to consumer.max-attempts, while later records
/// wait behind it; a database outage is retried for as long as it lasts
/// without spending attempts. A permanent failure, or an exhausted budget,
/// parks the record (parking): only then does the offset move (I5). Later
/// events of a parked order are parked behind it until a replay releases
/// them. Blocking (libpq, librdkafka), so spawned detached.
struct partition_worker_state {
  context_ptr ctx;
  std::string consumer;
  std::int32_t partition = 0;
  caf::actor group_member;
  std::optional<partition_faults> faults;
  std::optional<delivery_notes> notes;
  std::unique_ptr<event_sink> sink;
  std::unique_ptr<parking> dlq;
  std::deque<partition_record> pending;
  bool waiting_for_retry = false;
  bool work_scheduled = false; ///< a flush_atom is on its way
  /// After a failed batch: records to apply one per transaction before
  /// batching again, so a poison record is isolated exactly as without
  /// batches.
  size_t singles_left = 0;
  std::optional<retry_budget> retries; ///< of the front record

  /// Works through the pending records in order until one must wait;
  /// returns the delay before the next attempt, or zero when none is left.
  std::chrono::milliseconds work(caf::event_based_actor* self);
  /// One attempt at the front record: nullopt when it is through (applied,
  /// suppressed, skipped or parked), else why not. A database error
  /// anywhere in it is a failure, never a crash.
  std::optional<failure> attempt(const partition_record& rec);
  /// The plain records at the front, applied in one transaction (up to
  /// consumer.batch-max) and reported done in order; returns how many. 0
  /// when fewer than two qualify, during a retry, or when the batch failed
  /// (the one-at-a-time path then takes them).
  size_t apply_batch(caf::event_based_actor* self);
  /// The failure that keeps `ev` behind a parked earlier event of its
  /// order, if any.
  std::optional<failure> blocked_behind_parked(const order_event& ev,
                                               const partition_record& rec);
  /// Tells the group member the front record is done, and drops it.
  void finish_front(caf::event_based_actor* self);

  static inline const char* name = "partition";
};

caf::behavior
partition_worker(caf::stateful_actor<partition_worker_state>* self,
                 context_ptr ctx, std::string consumer, std::int32_t partition,
                 caf::actor group_member);

/// The same actor, built from `deps`.
caf::behavior
partition_worker_with(caf::stateful_actor<partition_worker_state>* self,
                      context_ptr ctx, std::string consumer,
                      std::int32_t partition, caf::actor group_member,
                      partition_worker_deps deps);

} // namespace ef
