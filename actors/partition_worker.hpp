#pragma once

#include "actors/context.hpp"
#include "actors/dlq_operations.hpp"
#include "config/backoff.hpp"
#include "consumers/event_applier.hpp"
#include "kafka/outbox_producer.hpp"
#include "messages/events.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <set>

namespace ef {

/// Whether retrying a failed delivery can help.
enum class failure_class {
  /// Connection lost, serialization failure, deadlock, lock or statement
  /// timeout, broker unavailable, order not (yet) visible: retry inline.
  transient,
  /// Undecodable payload, unknown event type, a rule that can never pass, a
  /// later event of an order whose earlier event is parked: DLQ at once.
  permanent,
};

/// Why a delivery failed: class, a short kind (the DLQ's error class) and
/// the message.
struct failure {
  failure_class cls;
  std::string kind;
  std::string message;
  /// The database could not be reached (or the session broke): not the
  /// record's fault, and parking it would need that database. Retried with
  /// backoff for as long as the outage lasts, without spending the
  /// record's consumer.max-attempts.
  bool outage = false;
};

/// Applies the records of ONE owned partition, strictly in offset order:
/// consecutive records share one transaction (each behind its own
/// idempotency mark), then the group member is told each record is done
/// (only then may its offset be committed). Any failure falls back to one
/// record per transaction, so the rules below apply to a single record.
///
/// A transient failure is retried inline with exponential backoff and
/// jitter, up to consumer.max-attempts, while later records wait behind it
/// (order kept; the group member pauses the partition when they pile up).
/// A permanent failure, or an exhausted budget, parks the record: it is
/// produced to the DLQ topic and, once acknowledged, recorded in
/// dlq_events; only then does the offset move (I5). Later events of a
/// parked order are parked behind it, in order, until a replay releases
/// them. Blocking (libpq, librdkafka), so detached.
struct partition_worker_state {
  context_ptr ctx;
  std::unique_ptr<event_applier> applier;
  std::unique_ptr<dlq_operations> dlq;
  std::unique_ptr<kafka::outbox_producer> dlq_producer;
  std::optional<std::set<std::string>> parked_orders; ///< candidates
  caf::actor group_member;
  std::string consumer;
  std::int32_t partition = 0;
  std::deque<partition_record> pending;
  bool waiting_for_retry = false;
  bool drain_scheduled = false; ///< a flush_atom is on its way
  /// After a failed batch: records to apply one per transaction before
  /// batching again, so a poison record is isolated exactly as without
  /// batches.
  size_t singles_left = 0;
  /// Failed attempts at the front record that count towards
  /// consumer.max-attempts (an outage does not).
  int attempts = 0;
  /// Waits between attempts at the front record, outages included
  /// (consumer.backoff-*); a success starts afresh.
  std::optional<config::backoff> retry_wait;
  /// The front record waits for the database: logged once at warn.
  bool in_outage = false;
  /// A suppressed duplicate was recorded in the recovery journal and must
  /// be written before any offset past it is reported done.
  bool journal_unflushed = false;
  std::string first_failure_at;

  /// Processes pending records in order until one must wait; returns the
  /// delay before the next attempt, or zero when the queue drained.
  std::chrono::milliseconds drain(caf::event_based_actor* self);
  /// One attempt at the front record: nullopt when done (applied,
  /// suppressed or parked), else the failure. Every database error, on any
  /// read or write of the attempt, is a failure here, never a crash.
  std::optional<failure> attempt(const partition_record& rec);
  std::optional<failure> attempt_unguarded(const partition_record& rec);
  /// Applies the plain records at the front of the queue in one
  /// transaction (up to consumer.batch-max) and reports each done, in
  /// offset order; returns how many. 0 when fewer than two qualify, during
  /// a retry, or when the batch failed (then the one-at-a-time path takes
  /// them).
  size_t apply_batch(caf::event_based_actor* self);
  /// The "delivered" trace hop of `rec`.
  void log_delivered(const order_event& ev, const partition_record& rec);
  /// Tells the group member the front record is done (its offset may be
  /// committed) and drops it.
  void finish_front(caf::event_based_actor* self);
  /// Metrics, trace hops and (for a suppressed duplicate) the recovery
  /// journal line of one applied, suppressed or deferred delivery.
  void note(const order_event& ev, apply_outcome outcome,
            const partition_record& rec);
  /// Parks `rec` in the DLQ; false if the DLQ did not acknowledge it or the
  /// entry could not be stored (the record is then retried).
  bool park(const partition_record& rec, const order_event* ev,
            const failure& why);
  /// True if the event's order has a parked head that this event must wait
  /// behind (sets `why`).
  bool blocked_behind_parked(const order_event& ev, const partition_record& rec,
                             failure& why);
  /// blocked_behind_parked for a batch: a database error ends the batch
  /// (true) instead of crashing the actor.
  bool blocked_behind_parked_or_unknown(const order_event& ev,
                                        const partition_record& rec);

  static inline const char* name = "partition";
};

caf::behavior
partition_worker(caf::stateful_actor<partition_worker_state>* self,
                 context_ptr ctx, std::string consumer, std::int32_t partition,
                 caf::actor group_member);

} // namespace ef
