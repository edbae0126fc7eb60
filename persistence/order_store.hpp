#pragma once

#include <eventforge/messages/order_messages.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace ef::persistence {

class session;

/// SQL text the hot paths run, exposed so that `eventforge bench` hands the
/// very same statements to pgbench for its baselines.
namespace sql {
/// One order (key claim, order, items, OrderCreated outbox row): $1 key,
/// $2 fingerprint, $3 order ID, $4 event ID, $5 customer, $6 total, $7 items
/// (JSON array), $8 shard, $9 event type, $10 payload, $11 headers.
extern const char* const create_order;
} // namespace sql

/// Outcome of writing a new order.
struct create_result {
  enum outcome_t {
    created,     ///< order, items and OrderCreated outbox row committed
    replayed,    ///< the idempotency key was used before with the same body
    key_conflict ///< the idempotency key was used before with another body
  } outcome;
  std::string order_id;
  std::string event_id;
  std::string status;
};

/// Outcome of a cancel request.
struct cancel_result {
  enum outcome_t { cancelled, not_found, already_cancelled } outcome;
  std::string event_id;
};

/// Writes order commands into one open transaction; handed out by
/// order_book::write. Each command is one statement (one round trip; the
/// first one's carries BEGIN), and nothing is durable until write()
/// commits. An interface, so that deterministic actor tests can hand the
/// API worker a fake.
class order_writer {
public:
  virtual ~order_writer() = default;
  /// Inserts order, items, idempotency key and the OrderCreated outbox row,
  /// or, when the key was claimed before (by an earlier commit or by a
  /// command earlier in this transaction), reports replayed/key_conflict
  /// and writes nothing.
  virtual create_result create(const create_order& cmd,
                               const std::string& order_id,
                               const std::string& event_id) = 0;
  /// Records the cancel request and the OrderCancelled outbox row.
  virtual cancel_result cancel(const std::string& order_id,
                               const std::string& traceparent) = 0;
};

/// What an API worker needs of the database: the production order_store,
/// or a fake in deterministic actor tests. Every call may throw db_error.
class order_book {
public:
  virtual ~order_book() = default;

  /// Runs `body` inside ONE transaction and commits it: every command it
  /// wrote becomes durable together (group commit) or, if anything throws,
  /// none does.
  ///
  /// With a `deadline`, no statement may run past it, and the transaction
  /// is rolled back instead of committed if the deadline has passed when
  /// the body is done: either way it throws db_error(transient) and nothing
  /// is written. Only COMMIT itself may end after the deadline.
  virtual void
  write(const std::function<void(order_writer&)>& body,
        std::optional<std::chrono::system_clock::time_point> deadline) = 0;

  /// The order with its items, events and per-consumer effects, read in
  /// one snapshot; nothing if there is no such order.
  virtual std::optional<order_view> view(const std::string& order_id) = 0;
};

/// The API's view of the database: writes an order and its outbox event in
/// one transaction. One instance per API actor (owns one connection). All
/// member functions throw db_error on database failures.
class order_store : public order_book {
public:
  order_store(std::string dsn, int shards);
  ~order_store() override;

  /// Runs `body` inside ONE transaction and commits it: every command it
  /// wrote becomes durable together (group commit) or, if anything throws,
  /// none does.
  ///
  /// With a `deadline`, no statement may run past it (statement_timeout),
  /// and the transaction is rolled back instead of committed if the
  /// deadline has passed when the body is done: either way it throws
  /// db_error(transient) and nothing is written. Only COMMIT itself may end
  /// after the deadline.
  void write(const std::function<void(order_writer&)>& body,
             std::optional<std::chrono::system_clock::time_point> deadline =
               std::nullopt) override;

  /// One order in its own transaction: order, items, idempotency key and
  /// the OrderCreated outbox row, all or none.
  create_result create(const create_order& cmd);
  /// Same, with IDs chosen by the caller (so it can log them first).
  create_result create(const create_order& cmd, const std::string& order_id,
                       const std::string& event_id);

  /// One cancel request and its OrderCancelled outbox row, in its own
  /// transaction.
  cancel_result cancel(const std::string& order_id,
                       const std::string& traceparent);

  std::optional<order_view> view(const std::string& order_id) override;

private:
  void
  write_once(const std::function<void(order_writer&)>& body,
             std::optional<std::chrono::system_clock::time_point> deadline);

  std::unique_ptr<session> db_;
  int shards_;
  /// The statements the server has prepared on the session's connection
  /// (of generation prepared_generation_): only these may travel with
  /// BEGIN. A first use prepares inside the transaction, under its
  /// statement_timeout: preparing reads the tables, and a lock held by
  /// another session must not hold a command past its deadline.
  std::set<std::string> prepared_;
  std::uint64_t prepared_generation_ = 0;
};

} // namespace ef::persistence
