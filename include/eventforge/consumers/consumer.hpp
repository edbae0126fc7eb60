#pragma once

#include <eventforge/messages/events.hpp>
#include <eventforge/messages/order_messages.hpp>

// The one public header with a libpqxx type: a consumer's rule runs its own
// statements inside EventForge's transaction (pqxx::transaction_base) on
// the partition actor's connection (pqxx::connection, through statements).
#include <pqxx/pqxx>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ef {

/// One order as a consumer's transaction sees it: read once when the
/// transaction starts, then changed by the events applied before the
/// current one (in offset order), exactly as if each had been applied in a
/// transaction of its own.
struct order_state {
  std::string id;
  /// A consumer may change it; EventForge writes changed statuses back.
  /// It is the one change to EventForge's tables a consumer makes: its own
  /// statements write its own tables only.
  std::string status;
  std::string customer_id;
  std::int64_t total_cents = 0;
  /// The order's lines, in the order they were placed (sku, qty,
  /// price_cents each), as the API wrote them: no SQL on order_items needed.
  std::vector<order_item> lines;
  /// `kind` of every business effect this consumer recorded for the order,
  /// including those of earlier events in this transaction.
  std::set<std::string> effect_kinds;
};

/// What applying one event did: EventForge records it as the event's one
/// business_effects row.
struct effect {
  std::string kind;
  std::int64_t amount_cents = 0;
  /// Units the effect concerns (e.g. items reserved), 0 if none.
  std::int64_t quantity = 0;
};

/// Where a consumer prepares its statements: on a partition actor's
/// connection, under names EventForge keeps apart from its own and from
/// other consumers' ("<consumer>.<name>").
class statements {
public:
  statements(pqxx::connection& c, std::string consumer)
      : c_(c), prefix_(std::move(consumer) + ".") {}

  /// Prepares `sql` as "<consumer>.<name>" and returns that name, the one
  /// to pass to exec_prepared in the consumer's transaction.
  std::string prepare(const std::string& name, const std::string& sql) {
    auto full = prefix_ + name;
    c_.prepare(full, sql);
    return full;
  }

private:
  pqxx::connection& c_;
  std::string prefix_;
};

/// A consumer's work within one of EventForge's transactions. EventForge
/// has already inserted the idempotency mark, checked that every earlier
/// event of the order was applied, and locked the orders; it commits (or
/// rolls everything back, this object's statements included) afterwards.
class consumer_transaction {
public:
  virtual ~consumer_transaction() = default;

  /// The business rule for one event of a type the consumer handles, in
  /// offset order. May change `order.status` and run its own statements.
  virtual effect apply(const order_event& ev, order_state& order) = 0;

  /// After the last event, before EventForge writes the effects and
  /// commits: the place for set-based statements over the whole batch.
  virtual void finish() {}
};

/// A consumer: a named business rule applied exactly once per event. It
/// never sees Kafka, offsets, retries or the dead-letter queue: the
/// partition actors apply its rule behind the idempotency guard, retry
/// transient failures and park what cannot be applied.
///
/// Implementations are shared by every partition actor of the consumer,
/// so they must be immutable after registration; per-transaction state
/// belongs in the consumer_transaction.
class consumer {
public:
  virtual ~consumer() = default;

  /// Lowercase letters, digits, '_' and '-': it names the Kafka group
  /// ("eventforge.<name>"), processed_events rows and metric labels.
  virtual std::string name() const = 0;

  /// The event types its rule handles (order_created_type, ...). An event
  /// of another type is still marked, so it is never applied later, and
  /// recorded as an "ignored" effect.
  virtual std::vector<std::string> event_types() const = 0;

  /// The consumer's own schema changes, oldest first; each entry is one
  /// migration, applied once at start in its own transaction and recorded
  /// in consumer_migrations under the consumer's name. Never edit a
  /// released entry: append.
  virtual std::vector<std::string> migrations() const { return {}; }

  /// Prepares the consumer's statements on a partition actor's connection
  /// (again after a reconnect); each is named "<name()>.<its name>".
  virtual void prepare(statements&) const {}

  /// Starts the consumer's part of one transaction.
  virtual std::unique_ptr<consumer_transaction>
  begin(pqxx::transaction_base& tx) const = 0;
};

using consumer_ptr = std::shared_ptr<const consumer>;

} // namespace ef
