#include "persistence/event_applier.hpp"

#include "persistence/connection.hpp"
#include "persistence/lock_classes.hpp"

#include <cctype>
#include <map>
#include <set>
#include <stdexcept>

namespace ef::persistence {

// In offset order, so two overlapping workers wait for each other's marks in
// the same order.
const char* const sql::mark =
  "INSERT INTO processed_events (consumer, event_id, kafka_partition, "
  "kafka_offset) SELECT $1, x.e::uuid, NULLIF(x.p, -1), NULLIF(x.o, -1) "
  "FROM unnest($2::text[], $3::int[], $4::bigint[]) WITH ORDINALITY "
  "AS x(e, p, o, i) ORDER BY x.i ON CONFLICT DO NOTHING "
  "RETURNING event_id::text";
// Sorted, so overlapping workers take the locks in the same order. Advisory
// locks, not the order rows': the other consumer's rules touch none of this
// consumer's state, so they must not wait for each other.
const char* const sql::lock_orders =
  "SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || o)) FROM "
  "(SELECT DISTINCT unnest($3::text[]) AS o ORDER BY 1) AS s";
// Its own statement, so its snapshot is taken after the locks are granted.
const char* const sql::read_orders =
  "SELECT id::text, status, customer_id, total_cents FROM orders "
  "WHERE id = ANY($1::uuid[])";
// LATERAL ... LIMIT 1 rather than EXISTS: for a generic plan over an array
// PostgreSQL may hash the whole of a consumer's processed_events for an
// EXISTS (54 ms at 9,000 marks, growing with the table); a LATERAL LIMIT is
// always one index probe per row.
const char* const sql::order_history =
  "SELECT e.order_id::text, e.seq, e.event_id::text, p.done IS NOT NULL, "
  "d.parked IS NOT NULL FROM outbox e "
  "LEFT JOIN LATERAL (SELECT 1 AS done FROM processed_events p "
  "WHERE p.consumer = $1 AND p.event_id = e.event_id LIMIT 1) p ON true "
  "LEFT JOIN LATERAL (SELECT 1 AS parked FROM dlq_events d "
  "WHERE d.consumer = $1 AND d.event_id = e.event_id::text LIMIT 1) d ON true "
  "WHERE e.order_id = ANY($2::uuid[])";
const char* const sql::order_effects =
  "SELECT order_id::text, kind FROM business_effects "
  "WHERE order_id = ANY($2::uuid[]) AND consumer = $1";
const char* const sql::set_statuses =
  "UPDATE orders r SET status = x.s, updated_at = clock_timestamp() "
  "FROM unnest($1::text[], $2::text[]) AS x(o, s) WHERE r.id = x.o::uuid";
// In offset order: business_effects.id then orders one order's effects.
const char* const sql::insert_effects =
  "INSERT INTO business_effects (consumer, event_id, order_id, kind, "
  "amount_cents) SELECT $1, x.e::uuid, x.o::uuid, x.k, x.a FROM "
  "unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) "
  "WITH ORDINALITY AS x(e, o, k, a, i) ORDER BY x.i";
// In customer order, at the end of the transaction: concurrent batches lock
// the accounts they share in the same order (no deadlock), and briefly.
const char* const sql::adjust_balances =
  "INSERT INTO accounts (customer_id, balance_cents) "
  "SELECT c, d FROM unnest($1::text[], $2::bigint[]) AS x(c, d) "
  "ORDER BY c ON CONFLICT (customer_id) DO UPDATE SET "
  "balance_cents = accounts.balance_cents + EXCLUDED.balance_cents, "
  "updated_at = clock_timestamp()";

namespace {

void prepare(pqxx::connection& c) {
  c.prepare("mark", sql::mark);
  c.prepare("lock_orders", sql::lock_orders);
  c.prepare("read_orders", sql::read_orders);
  c.prepare("order_history", sql::order_history);
  c.prepare("order_effects", sql::order_effects);
  c.prepare("set_statuses", sql::set_statuses);
  c.prepare("insert_effects", sql::insert_effects);
  c.prepare("adjust_balances", sql::adjust_balances);
  c.prepare("unmark", "DELETE FROM processed_events WHERE consumer = $1 AND "
                      "event_id = ANY($2::uuid[])");
  c.prepare("requeue",
            "UPDATE outbox SET sent_at = NULL, republish_count = "
            "republish_count + 1 WHERE (seq = ANY($1::bigint[]) OR event_id "
            "= ANY($2::uuid[])) AND sent_at IS NOT NULL");
}

/// The lowercase, hyphenated form PostgreSQL prints, so IDs from a record
/// compare equal to IDs read back as text. Anything that is not a UUID stays
/// as it is (the ::uuid casts then refuse it: a permanent error).
std::string canonical_uuid(const std::string& s) {
  std::string hex;
  for (char ch : s) {
    if (ch == '-' || ch == '{' || ch == '}')
      continue;
    if (!std::isxdigit(static_cast<unsigned char>(ch)))
      return s;
    hex += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (hex.size() != 32)
    return s;
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) +
         "-" + hex.substr(16, 4) + "-" + hex.substr(20);
}

/// An earlier or later event of an order, as the outbox knows it.
struct history_row {
  std::int64_t seq;
  std::string event_id;
  bool processed; ///< marked by this consumer before this transaction
  bool parked;
};

/// What the rules read and change of one order during a transaction.
struct order_state {
  bool exists = false; ///< history rows may outlive a missing order's row
  std::string status;
  std::string customer_id;
  std::int64_t total_cents = 0;
  std::set<std::string> kinds; ///< this consumer's effects (billing)
  std::vector<history_row> history;
  bool status_changed = false;
};

struct effect {
  std::string kind;
  std::int64_t amount_cents = 0;
};

/// Balance changes of one transaction, by customer (sorted).
using balance_deltas = std::map<std::string, std::int64_t>;

effect apply_fulfillment(const order_event& ev, order_state& o) {
  if (ev.event_type == order_created_type) {
    if (o.status != "created")
      return {"fulfill_skipped", 0};
    o.status = "processed";
    o.status_changed = true;
    return {"fulfilled", 0};
  }
  o.status = "cancelled";
  o.status_changed = true;
  return {"cancelled", 0};
}

effect apply_billing(const order_event& ev, order_state& o,
                     balance_deltas& deltas) {
  auto has = [&](std::initializer_list<const char*> kinds) {
    for (auto* k : kinds)
      if (o.kinds.count(k))
        return true;
    return false;
  };
  if (ev.event_type == order_created_type) {
    if (has({"refund", "refund_skipped"}))
      return {"debit_skipped", 0};
    deltas[o.customer_id] -= o.total_cents;
    return {"debit", o.total_cents};
  }
  if (!has({"debit"}))
    return {"refund_skipped", 0};
  deltas[o.customer_id] += o.total_cents;
  return {"refund", o.total_cents};
}

void check_type(const order_event& ev) {
  if (ev.event_type != order_created_type &&
      ev.event_type != order_cancelled_type)
    throw db_error(db_errc::permanent,
                   "unknown event type \"" + ev.event_type + "\"");
}

/// The guard and the rules for `input` (one partition's events, in offset
/// order) inside `w`; leaves `w` open. Returns the outcomes of the events
/// before the first one whose order is missing (that one and the rest are
/// unmarked: they need retries of their own). Each event gets exactly the
/// outcome it would get applied alone, after the ones before it.
std::vector<apply_outcome> apply_in(pqxx::work& w, const std::string& consumer,
                                    consumer_kind kind,
                                    const std::vector<order_event>& input,
                                    const std::vector<delivery_position>& at) {
  auto n = input.size();
  std::vector<std::string> ev_ids, order_ids;
  std::vector<std::int64_t> partitions, offsets;
  for (size_t i = 0; i < n; ++i) {
    ev_ids.push_back(canonical_uuid(input[i].event_id));
    order_ids.push_back(canonical_uuid(input[i].order_id));
    auto pos = i < at.size() ? at[i] : delivery_position{};
    partitions.push_back(pos.partition);
    offsets.push_back(pos.offset);
  }
  // The idempotency guard: a concurrent duplicate blocks here until the
  // first transaction ends, then inserts nothing.
  std::set<std::string> fresh;
  for (const auto& row :
       w.exec_prepared("mark", consumer, array_literal(ev_ids),
                       array_literal(partitions), array_literal(offsets)))
    fresh.insert(row[0].as<std::string>());
  // An event repeated within the batch counts once: later copies are
  // duplicates, as they would be one transaction later.
  std::vector<bool> first(n);
  std::set<std::string> seen;
  std::vector<std::string> orders;
  for (size_t i = 0; i < n; ++i) {
    first[i] = fresh.count(ev_ids[i]) && seen.insert(ev_ids[i]).second;
    if (first[i])
      orders.push_back(order_ids[i]);
  }
  if (orders.empty())
    return std::vector<apply_outcome>(n, apply_outcome::duplicate);

  // With the orders locked, their earlier events cannot be applied by an
  // overlapping worker meanwhile.
  auto list = array_literal(orders);
  w.exec_prepared("lock_orders", consumer_order_lock_class, consumer, list);
  std::map<std::string, order_state> state;
  for (const auto& row : w.exec_prepared("read_orders", list)) {
    auto& o = state[row[0].as<std::string>()];
    o.exists = true;
    o.status = row[1].as<std::string>();
    o.customer_id = row[2].as<std::string>();
    o.total_cents = row[3].as<std::int64_t>();
  }
  for (const auto& row : w.exec_prepared("order_history", consumer, list))
    state[row[0].as<std::string>()].history.push_back(
      {row[1].as<std::int64_t>(), row[2].as<std::string>(), row[3].as<bool>(),
       row[4].as<bool>()});
  if (kind == consumer_kind::billing)
    for (const auto& row : w.exec_prepared("order_effects", consumer, list))
      state[row[0].as<std::string>()].kinds.insert(row[1].as<std::string>());

  std::vector<apply_outcome> out;
  std::set<std::string> applied; // events applied earlier in this batch
  std::vector<std::string> unmark, requeue_events;
  std::vector<std::int64_t> requeue_seqs;
  std::vector<std::string> fx_events, fx_orders, fx_kinds;
  std::vector<std::int64_t> fx_amounts;
  balance_deltas deltas;
  size_t i = 0;
  for (; i < n; ++i) {
    if (!first[i]) {
      out.push_back(apply_outcome::duplicate); // wrote nothing
      continue;
    }
    auto& o = state[order_ids[i]];
    if (!o.exists)
      break; // order_missing: this event and the rest are not applied here
    // Earlier events of the order this consumer still needs: neither
    // applied (before this transaction, or earlier in it) nor parked.
    // Events not in the outbox (retention) have no predecessors.
    std::vector<std::int64_t> missing;
    for (auto& self : o.history) {
      if (self.event_id != ev_ids[i])
        continue;
      for (auto& h : o.history) {
        bool done =
          fresh.count(h.event_id) ? applied.count(h.event_id) > 0 : h.processed;
        if (h.seq < self.seq && !done && !h.parked)
          missing.push_back(h.seq);
      }
    }
    if (!missing.empty()) {
      // Queued again, in seq order, by the relay: they arrive in order.
      unmark.push_back(ev_ids[i]);
      requeue_events.push_back(ev_ids[i]);
      requeue_seqs.insert(requeue_seqs.end(), missing.begin(), missing.end());
      out.push_back(apply_outcome::deferred);
      continue;
    }
    auto e = kind == consumer_kind::fulfillment
               ? apply_fulfillment(input[i], o)
               : apply_billing(input[i], o, deltas);
    o.kinds.insert(e.kind);
    fx_events.push_back(ev_ids[i]);
    fx_orders.push_back(order_ids[i]);
    fx_kinds.push_back(e.kind);
    fx_amounts.push_back(e.amount_cents);
    applied.insert(ev_ids[i]);
    out.push_back(apply_outcome::applied);
  }
  for (; i < n; ++i)
    if (first[i])
      unmark.push_back(ev_ids[i]);

  std::vector<std::string> status_orders, statuses;
  for (auto& [id, o] : state)
    if (o.status_changed) {
      status_orders.push_back(id);
      statuses.push_back(o.status);
    }
  if (!status_orders.empty())
    w.exec_prepared("set_statuses", array_literal(status_orders),
                    array_literal(statuses));
  if (!fx_events.empty())
    w.exec_prepared("insert_effects", consumer, array_literal(fx_events),
                    array_literal(fx_orders), array_literal(fx_kinds),
                    array_literal(fx_amounts));
  if (!deltas.empty()) {
    std::vector<std::string> customers;
    std::vector<std::int64_t> amounts;
    for (auto& [customer, delta] : deltas) {
      customers.push_back(customer);
      amounts.push_back(delta);
    }
    w.exec_prepared("adjust_balances", array_literal(customers),
                    array_literal(amounts));
  }
  if (!unmark.empty())
    w.exec_prepared("unmark", consumer, array_literal(unmark));
  if (!requeue_events.empty())
    w.exec_prepared("requeue", array_literal(requeue_seqs),
                    array_literal(requeue_events));
  return out;
}

} // namespace

const char* to_string(apply_outcome x) {
  switch (x) {
  case apply_outcome::applied:
    return "applied";
  case apply_outcome::duplicate:
    return "duplicate";
  case apply_outcome::order_missing:
    return "order_missing";
  case apply_outcome::deferred:
    return "deferred";
  }
  return "unknown";
}

consumer_kind event_applier::kind_of(const std::string& consumer) {
  if (consumer == "fulfillment")
    return consumer_kind::fulfillment;
  if (consumer == "billing")
    return consumer_kind::billing;
  throw std::invalid_argument("unknown consumer: " + consumer);
}

event_applier::event_applier(std::string dsn, std::string consumer)
    : db_(std::make_unique<session>(std::move(dsn), prepare)),
      consumer_(std::move(consumer)), kind_(kind_of(consumer_)) {
  // nop
}

event_applier::~event_applier() = default;

apply_outcome event_applier::apply(const order_event& ev,
                                   const std::function<void()>& before_commit,
                                   delivery_position at) {
  check_type(ev);
  // On failure run() forgets the session: a broken one is reopened by the
  // next apply().
  return db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    auto out = apply_in(w, consumer_, kind_, {ev}, {at});
    auto outcome = out.empty() ? apply_outcome::order_missing : out.front();
    if (outcome == apply_outcome::applied && before_commit)
      before_commit();
    // A duplicate wrote nothing; order_missing rolls its mark back.
    if (outcome == apply_outcome::applied || outcome == apply_outcome::deferred)
      w.commit();
    return outcome;
  });
}

std::vector<apply_outcome>
event_applier::apply_batch(const std::vector<order_event>& evs,
                           const std::vector<delivery_position>& at,
                           const std::function<void()>& before_commit) {
  for (auto& ev : evs)
    check_type(ev);
  return db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    auto out = apply_in(w, consumer_, kind_, evs, at);
    if (before_commit)
      before_commit();
    w.commit();
    return out;
  });
}

} // namespace ef::persistence
