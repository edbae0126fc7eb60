#pragma once

#include "messages/tree_messages.hpp"
#include <eventforge/consumers/consumer.hpp>
#include <eventforge/messages/events.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ef {

namespace persistence {
class session;
}

/// SQL text a consumer runs for a transaction's events, exposed so that
/// `eventforge bench` hands the very same statements to pgbench. Each takes
/// the whole batch as arrays (text[] of canonical UUIDs), so a transaction
/// costs the same few round trips for 1 event or 100.
namespace sql {
/// The transaction's opening, sent with its BEGIN (no parameters, so its
/// values come as SQL literals or pgbench expressions): locks the orders of
/// the batch, sorted, in `lock_class` for `consumer`.
std::string lock_orders(const std::string& lock_class,
                        const std::string& consumer,
                        const std::string& order_ids);
/// The idempotency guard and everything the rules read of the locked
/// orders, in one statement (one snapshot, taken after the locks; the reads
/// do not see this statement's marks). $1 consumer, $2 event IDs, $3
/// partitions and $4 offsets they were read at (-1: unknown), $5 order IDs.
/// Rows of kind 0: order, status, customer, total of those that exist;
/// kind 1: order, seq, event ID, applied, parked for every outbox event of
/// those orders (applied or parked by this consumer before); kind 2: order,
/// effect kind for this consumer's effects on those orders; kind 3: order,
/// sku, quantity, line number, price of each line; kind 4: an event ID it
/// marked (the others were marked before: duplicates).
extern const char* const mark_and_read;
/// $1 consumer, $2 event IDs, $3 order IDs, $4 kinds, $5 amounts, $6
/// quantities, $7 the order's new status on its last row (else NULL).
extern const char* const write_effects;
} // namespace sql

/// What applying one delivery did.
enum class apply_outcome {
  /// First delivery for this consumer: mark and business change committed.
  applied,
  /// The (consumer, event_id) mark already existed: nothing changed.
  duplicate,
  /// The event's order does not exist (yet): rolled back, no mark saved.
  order_missing,
  /// An earlier event of the same order (lower outbox seq) is neither applied
  /// nor parked by this consumer: the broker lost it, or it was republished
  /// after this one. Nothing is applied; this event and the missing earlier
  /// ones are queued again in the same transaction, so the relay republishes
  /// them in seq order and they arrive in per-order order.
  deferred,
};

const char* to_string(apply_outcome x);

/// What a partition actor applies events through: the event_applier, or a
/// fake in deterministic actor tests. Throws db_error.
class event_sink {
public:
  virtual ~event_sink() = default;
  virtual apply_outcome apply(const order_event& ev,
                              const std::function<void()>& before_commit,
                              delivery_position at) = 0;
  virtual std::vector<apply_outcome>
  apply_batch(const std::vector<order_event>& evs,
              const std::vector<delivery_position>& at,
              const std::function<void()>& before_commit) = 0;
};

/// Applies events for one consumer (consumers/consumer.hpp) in the
/// idempotent transaction:
///   INSERT (consumer, event_id) ON CONFLICT DO NOTHING; only if inserted,
///   and only if every earlier event of the order was applied (or parked)
///   by this consumer, run the consumer's rule and append one
///   business_effects row; commit. EventForge's statements are set-based:
///   the rules run in C++ over rows read once per transaction, in offset
///   order, with exactly the outcomes of applying the events one after
///   another.
/// One instance per partition actor (owns one connection). Throws db_error.
class event_applier : public event_sink {
public:
  event_applier(std::string dsn, consumer_ptr consumer);

  /// A built-in consumer (fulfillment, billing) by name; throws
  /// std::invalid_argument if there is none of that name.
  event_applier(std::string dsn, const std::string& builtin_consumer);
  ~event_applier() override;

  /// `before_commit` runs inside the transaction after the business change,
  /// right before COMMIT (a crash there rolls everything back).
  /// `at` is where this copy was read; it is stored with the mark.
  apply_outcome apply(const order_event& ev,
                      const std::function<void()>& before_commit = {},
                      delivery_position at = {}) override;

  /// Applies consecutive events of one partition in ONE transaction, in
  /// order, each behind the same guard as apply(). Stops before the first
  /// event whose order is missing (it needs retries of its own) and returns
  /// the outcomes of the events before it. Any database error rolls back
  /// all of them: the caller falls back to apply() one event at a time.
  /// `before_commit` runs once, right before COMMIT.
  /// `at` holds each event's position (or is empty: none known).
  std::vector<apply_outcome>
  apply_batch(const std::vector<order_event>& evs,
              const std::vector<delivery_position>& at = {},
              const std::function<void()>& before_commit = {}) override;

  const std::string& consumer() const { return name_; }

private:
  consumer_ptr consumer_;
  std::string name_;
  std::unique_ptr<persistence::session> db_;
};

} // namespace ef
