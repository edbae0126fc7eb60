#include "persistence/event_applier.hpp"

#include "persistence/connection.hpp"

#include <stdexcept>

namespace ef::persistence {

namespace {

void prepare(pqxx::connection& c) {
  c.prepare("mark", "INSERT INTO processed_events (consumer, event_id) "
                    "VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1");
  // Locks the order row: serializes the rules of one order even when a
  // rebalance lets two partition actors overlap for a moment.
  c.prepare("lock_order", "SELECT status, customer_id, total_cents "
                          "FROM orders WHERE id = $1 FOR UPDATE");
  // Earlier events of the order this consumer still needs: neither applied
  // nor parked. Events not in the outbox (retention) have no predecessors.
  c.prepare("missing_predecessors",
            "SELECT o.seq FROM outbox o WHERE o.order_id = $2 AND o.seq < "
            "(SELECT seq FROM outbox WHERE event_id = $3) AND NOT EXISTS "
            "(SELECT 1 FROM processed_events p WHERE p.consumer = $1 AND "
            "p.event_id = o.event_id) AND NOT EXISTS (SELECT 1 FROM "
            "dlq_events d WHERE d.consumer = $1 AND d.event_id = "
            "o.event_id::text) ORDER BY o.seq");
  c.prepare("unmark", "DELETE FROM processed_events WHERE consumer = $1 AND "
                      "event_id = $2");
  c.prepare("requeue",
            "UPDATE outbox SET sent_at = NULL, republish_count = "
            "republish_count + 1 WHERE (seq = ANY($1::bigint[]) OR event_id "
            "= $2) AND sent_at IS NOT NULL");
  c.prepare("set_status", "UPDATE orders SET status = $2, "
                          "updated_at = clock_timestamp() WHERE id = $1");
  c.prepare("effect", "INSERT INTO business_effects (consumer, event_id, "
                      "order_id, kind, amount_cents) "
                      "VALUES ($1, $2, $3, $4, $5)");
  c.prepare("has_effect", "SELECT 1 FROM business_effects WHERE order_id = $1 "
                          "AND consumer = $2 AND kind = ANY($3::text[]) "
                          "LIMIT 1");
  c.prepare("adjust_balance",
            "INSERT INTO accounts (customer_id, balance_cents) "
            "VALUES ($1, $2) ON CONFLICT (customer_id) DO UPDATE SET "
            "balance_cents = accounts.balance_cents + EXCLUDED.balance_cents, "
            "updated_at = clock_timestamp()");
}

struct order_row {
  std::string status;
  std::string customer_id;
  std::int64_t total_cents;
};

struct effect {
  std::string kind;
  std::int64_t amount_cents = 0;
};

effect apply_fulfillment(pqxx::work& w, const order_event& ev,
                         const order_row& o) {
  if (ev.event_type == order_created_type) {
    if (o.status != "created")
      return {"fulfill_skipped", 0};
    w.exec_prepared("set_status", ev.order_id, "processed");
    return {"fulfilled", 0};
  }
  w.exec_prepared("set_status", ev.order_id, "cancelled");
  return {"cancelled", 0};
}

effect apply_billing(pqxx::work& w, const order_event& ev, const order_row& o,
                     const std::string& consumer) {
  auto has = [&](const char* kinds) {
    return !w.exec_prepared("has_effect", ev.order_id, consumer, kinds).empty();
  };
  if (ev.event_type == order_created_type) {
    if (has("{refund,refund_skipped}"))
      return {"debit_skipped", 0};
    w.exec_prepared("adjust_balance", o.customer_id, -o.total_cents);
    return {"debit", o.total_cents};
  }
  if (!has("{debit}"))
    return {"refund_skipped", 0};
  w.exec_prepared("adjust_balance", o.customer_id, o.total_cents);
  return {"refund", o.total_cents};
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

namespace {

void check_type(const order_event& ev) {
  if (ev.event_type != order_created_type &&
      ev.event_type != order_cancelled_type)
    throw db_error(db_errc::permanent,
                   "unknown event type \"" + ev.event_type + "\"");
}

/// The guard and the rule for one event inside `w`; leaves `w` open. A
/// duplicate writes nothing; order_missing leaves its mark, which the caller
/// must not commit.
apply_outcome apply_in(pqxx::work& w, const std::string& consumer,
                       consumer_kind kind, const order_event& ev) {
  // The idempotency guard: a concurrent duplicate blocks here until the
  // first transaction ends, then inserts nothing.
  if (w.exec_prepared("mark", consumer, ev.event_id).empty())
    return apply_outcome::duplicate; // wrote nothing
  auto r = w.exec_prepared("lock_order", ev.order_id);
  if (r.empty())
    return apply_outcome::order_missing; // the mark stays: see the callers
  // With the order locked, its earlier events cannot be applied by an
  // overlapping worker meanwhile.
  auto missing =
    w.exec_prepared("missing_predecessors", consumer, ev.order_id, ev.event_id);
  if (!missing.empty()) {
    std::vector<std::int64_t> seqs;
    for (const auto& row : missing)
      seqs.push_back(row[0].as<std::int64_t>());
    w.exec_prepared("unmark", consumer, ev.event_id);
    w.exec_prepared("requeue", array_literal(seqs), ev.event_id);
    return apply_outcome::deferred;
  }
  order_row o{r[0][0].as<std::string>(), r[0][1].as<std::string>(),
              r[0][2].as<std::int64_t>()};
  auto e = kind == consumer_kind::fulfillment
             ? apply_fulfillment(w, ev, o)
             : apply_billing(w, ev, o, consumer);
  w.exec_prepared("effect", consumer, ev.event_id, ev.order_id, e.kind,
                  e.amount_cents);
  return apply_outcome::applied;
}

} // namespace

apply_outcome event_applier::apply(const order_event& ev,
                                   const std::function<void()>& before_commit) {
  check_type(ev);
  try {
    pqxx::work w(db_->get());
    auto outcome = apply_in(w, consumer_, kind_, ev);
    if (outcome == apply_outcome::applied && before_commit)
      before_commit();
    if (outcome == apply_outcome::applied || outcome == apply_outcome::deferred)
      w.commit();
    return outcome;
  } catch (...) {
    // A broken session is reopened by the next apply().
    db_->reset();
    rethrow_as_db_error();
  }
}

std::vector<apply_outcome>
event_applier::apply_batch(const std::vector<order_event>& evs,
                           const std::function<void()>& before_commit) {
  for (auto& ev : evs)
    check_type(ev);
  std::vector<apply_outcome> out;
  try {
    pqxx::work w(db_->get());
    for (auto& ev : evs) {
      auto outcome = apply_in(w, consumer_, kind_, ev);
      if (outcome == apply_outcome::order_missing) {
        // This one needs its own retries; commit the ones before it only.
        w.exec_prepared("unmark", consumer_, ev.event_id);
        break;
      }
      out.push_back(outcome);
    }
    if (before_commit)
      before_commit();
    w.commit();
    return out;
  } catch (...) {
    db_->reset();
    rethrow_as_db_error();
  }
}

} // namespace ef::persistence
