#include "applier/event_applier.hpp"

#include "persistence/connection.hpp"
#include "persistence/lock_classes.hpp"
#include <eventforge/consumers/consumer_registry.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace ef {

// The store side of the transaction: sessions, classified errors and array
// parameters from persistence/.
using persistence::array_literal;
using persistence::consumer_order_lock_class;
using persistence::db_errc;
using persistence::db_error;
using persistence::rethrow_as_db_error;
using persistence::session;

// Sorted, so overlapping workers take the locks in the same order. Advisory
// locks, not the order rows': the other consumer's rules touch none of this
// consumer's state, so they must not wait for each other. Taken first: every
// transaction that marks an event of an order for this consumer holds the
// order's lock, so a duplicate of an event in flight waits here until the
// first transaction ended, and the guard below never waits for another
// transaction's mark.
std::string sql::lock_orders(const std::string& lock_class,
                             const std::string& consumer,
                             const std::string& order_ids) {
  return "SELECT pg_advisory_xact_lock(" + lock_class + ", hashtext(" +
         consumer + " || '/' || o)) FROM (SELECT DISTINCT unnest(" + order_ids +
         "::text[]) AS o ORDER BY 1) AS s";
}
// After the locks, in its own statement so that its snapshot is taken after
// they were granted; the guard and the reads in one statement rather than
// four, so a transaction costs three round trips fewer. The reads see the
// marks committed before, not this statement's (a data-modifying CTE's rows
// are invisible to the rest of its statement): exactly "applied before this
// transaction". LATERAL ... LIMIT 1 rather than EXISTS: for a generic plan
// over an array PostgreSQL may hash the whole of a consumer's
// processed_events for an EXISTS (54 ms at 9,000 marks, growing with the
// table); a LATERAL LIMIT is always one index probe per row. The order IDs
// are bound once (pgbench allows 255 parameters per statement); `= ANY` of
// the subquery is still an index condition.
const char* const sql::mark_and_read =
  R"sql(
      WITH marked AS (
        INSERT INTO processed_events (consumer, event_id, kafka_partition,
                                      kafka_offset)
        SELECT $1, x.e::uuid, NULLIF(x.p, -1), NULLIF(x.o, -1)
        FROM unnest($2::text[], $3::int[], $4::bigint[]) WITH ORDINALITY
          AS x(e, p, o, i)
        ORDER BY x.i ON CONFLICT DO NOTHING
        RETURNING event_id::text AS e),
      ids AS (SELECT $5::uuid[] AS a)
      SELECT 0, id::text, status, customer_id, total_cents, NULL, false, false,
             NULL::bigint
      FROM orders WHERE id = ANY((SELECT a FROM ids)::uuid[])
      UNION ALL
      SELECT 1, e.order_id::text, NULL, NULL, e.seq, e.event_id::text,
             p.done IS NOT NULL, d.parked IS NOT NULL, NULL
      FROM outbox e
      LEFT JOIN LATERAL (SELECT 1 AS done FROM processed_events p
        WHERE p.consumer = $1 AND p.event_id = e.event_id LIMIT 1) p ON true
      LEFT JOIN LATERAL (SELECT 1 AS parked FROM dlq_events d
        WHERE d.consumer = $1 AND d.event_id = e.event_id::text LIMIT 1) d
        ON true
      WHERE e.order_id = ANY((SELECT a FROM ids)::uuid[])
      UNION ALL
      SELECT 2, order_id::text, kind, NULL, NULL, NULL, false, false, NULL
      FROM business_effects
      WHERE order_id = ANY((SELECT a FROM ids)::uuid[]) AND consumer = $1
      UNION ALL
      SELECT 3, order_id::text, sku, NULL, qty, line::text, false, false,
             price_cents
      FROM order_items WHERE order_id = ANY((SELECT a FROM ids)::uuid[])
      UNION ALL
      SELECT 4, e, NULL, NULL, NULL, NULL, false, false, NULL FROM marked
  )sql";
// In offset order: business_effects.id then orders one order's effects. An
// order's new status rides on its last effect row ($7, NULL on the others
// and where no rule changed it). The rows whose status changes are locked
// first, in ID order: another consumer's rule may change statuses of the
// same orders (its order locks are its own), and rows locked in each
// batch's offset order could deadlock with it. Each parameter is used
// once, so that pgbench, which spells out every use, stays within its 255
// arguments.
const char* const sql::write_effects =
  R"sql(
      WITH x AS (
        SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[],
                             $6::bigint[], $7::text[]) WITH ORDINALITY
          AS x(e, o, k, a, q, s, i)),
      locked AS (
        SELECT r.id, x.s FROM orders r JOIN x ON r.id = x.o::uuid
        WHERE x.s IS NOT NULL ORDER BY r.id FOR UPDATE OF r),
      statuses AS (
        UPDATE orders r SET status = l.s, updated_at = clock_timestamp()
        FROM locked l WHERE r.id = l.id RETURNING 1)
      INSERT INTO business_effects (consumer, event_id, order_id, kind,
                                    amount_cents, quantity)
      SELECT $1, x.e::uuid, x.o::uuid, x.k, x.a, x.q FROM x ORDER BY x.i
  )sql";
namespace {

void prepare(pqxx::connection& c) {
  c.prepare("mark_and_read", sql::mark_and_read);
  c.prepare("write_effects", sql::write_effects);
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

/// What EventForge reads of one order during a transaction, and what the
/// consumer's rule sees and changes of it.
struct order_rows {
  bool exists = false; ///< history rows may outlive a missing order's row
  order_state state;
  std::string read_status; ///< as read, to write back only changes
  std::vector<history_row> history;
};

void check_type(const order_event& ev) {
  if (ev.event_type != order_created_type &&
      ev.event_type != order_cancelled_type)
    throw db_error(db_errc::permanent,
                   "unknown event type \"" + ev.event_type + "\"");
  // A payload from a newer EventForge: this consumer cannot know what it
  // means. Parked (permanent), replayed after the upgrade.
  auto doc = nlohmann::json::parse(ev.payload, nullptr, false);
  if (doc.is_object() && doc.contains("schema_version")) {
    auto& v = doc["schema_version"];
    if (!v.is_number_integer() || v.get<long long>() < 1 ||
        v.get<long long>() > payload_schema_version)
      throw db_error(db_errc::permanent,
                     ev.event_type + " payload schema_version " + v.dump() +
                       " is not one this consumer knows (1.." +
                       std::to_string(payload_schema_version) +
                       "): upgrade it, then replay the event from the DLQ");
  }
}

/// A batch's IDs as the statements take them, in offset order.
struct batch_ids {
  std::vector<std::string> events, orders;
  std::vector<std::int64_t> partitions, offsets;
};

batch_ids ids_of(const std::vector<order_event>& input,
                 const std::vector<delivery_position>& at) {
  batch_ids ids;
  for (size_t i = 0; i < input.size(); ++i) {
    ids.events.push_back(canonical_uuid(input[i].event_id));
    ids.orders.push_back(canonical_uuid(input[i].order_id));
    auto pos = i < at.size() ? at[i] : delivery_position{};
    ids.partitions.push_back(pos.partition);
    ids.offsets.push_back(pos.offset);
  }
  return ids;
}

/// The opening of a batch's transaction, in one round trip with BEGIN: its
/// orders' locks, then the guard and the reads (opened()).
std::string lock_opening(pqxx::connection& c, const std::string& consumer,
                         const batch_ids& ids) {
  return sql::lock_orders(std::to_string(consumer_order_lock_class),
                          c.quote(consumer),
                          c.quote(array_literal(ids.orders))) +
         "; " +
         persistence::execute_sql(
           c, "mark_and_read",
           {consumer, array_literal(ids.events), array_literal(ids.partitions),
            array_literal(ids.offsets), array_literal(ids.orders)});
}

/// What a batch's opening read: the events this transaction marked (the
/// others were marked before: duplicates) and each order's rows.
struct opened_batch {
  std::set<std::string> fresh;
  std::map<std::string, order_rows> orders;
};

/// The opening's rows (sql::mark_and_read), by their first column: 0 an
/// order, 1 its outbox history, 2 an effect kind, 3 an item line, 4 an
/// event the guard marked now. A concurrent duplicate waited for the order
/// lock until the first transaction ended, and marked nothing.
opened_batch read_opened(const pqxx::result& rows) {
  opened_batch b;
  std::map<std::string, std::map<int, order_item>> lines; // by line number
  for (const auto& row : rows) {
    auto kind = row[0].as<int>();
    if (kind == 4) {
      b.fresh.insert(row[1].as<std::string>());
      continue;
    }
    auto& o = b.orders[row[1].as<std::string>()];
    switch (kind) {
    case 0:
      o.exists = true;
      o.state.id = row[1].as<std::string>();
      o.state.status = o.read_status = row[2].as<std::string>();
      o.state.customer_id = row[3].as<std::string>();
      o.state.total_cents = row[4].as<std::int64_t>();
      break;
    case 1:
      o.history.push_back({row[4].as<std::int64_t>(), row[5].as<std::string>(),
                           row[6].as<bool>(), row[7].as<bool>()});
      break;
    case 2:
      o.state.effect_kinds.insert(row[2].as<std::string>());
      break;
    default:
      lines[row[1].as<std::string>()][std::stoi(row[5].as<std::string>())] =
        order_item{row[2].as<std::string>(), row[4].as<std::int64_t>(),
                   row[8].as<std::int64_t>()};
    }
  }
  for (auto& [id, by_line] : lines)
    for (auto& [line, item] : by_line)
      b.orders[id].state.lines.push_back(std::move(item));
  return b;
}

/// Which events of the batch this transaction applies: those it marked, and
/// of an event repeated within the batch the first copy only (later copies
/// are duplicates, as they would be one transaction later).
std::vector<bool> first_copies(const std::vector<std::string>& events,
                               const std::set<std::string>& fresh) {
  std::vector<bool> first(events.size());
  std::set<std::string> seen;
  for (size_t i = 0; i < events.size(); ++i)
    first[i] = fresh.count(events[i]) && seen.insert(events[i]).second;
  return first;
}

/// Earlier events of `o` this consumer still needs before `event_id`:
/// neither applied (before this transaction, or earlier in it: `applied`)
/// nor parked. Events no longer in the outbox (retention) have none.
std::vector<std::int64_t> missing_before(const order_rows& o,
                                         const std::string& event_id,
                                         const std::set<std::string>& fresh,
                                         const std::set<std::string>& applied) {
  std::vector<std::int64_t> missing;
  for (auto& self : o.history) {
    if (self.event_id != event_id)
      continue;
    for (auto& h : o.history) {
      bool done =
        fresh.count(h.event_id) ? applied.count(h.event_id) > 0 : h.processed;
      if (h.seq < self.seq && !done && !h.parked)
        missing.push_back(h.seq);
    }
  }
  return missing;
}

/// What a batch's rules decided to write; it travels with the COMMIT.
struct batch_writes {
  std::vector<std::string> unmark, requeue_events;
  std::vector<std::int64_t> requeue_seqs;
  std::vector<std::string> fx_events, fx_orders, fx_kinds;
  std::vector<std::int64_t> fx_amounts, fx_quantities;

  void effect_of(const std::string& event, const std::string& order,
                 const effect& e) {
    fx_events.push_back(event);
    fx_orders.push_back(order);
    fx_kinds.push_back(e.kind);
    fx_amounts.push_back(e.amount_cents);
    fx_quantities.push_back(e.quantity);
  }
};

/// The consumer's rules over the batch, event by event, in offset order:
/// each event gets exactly the outcome it would get applied alone, after
/// the ones before it. Stops at the first event whose order is missing
/// (that one and the rest are unmarked: they need retries of their own).
std::vector<apply_outcome>
apply_rules(persistence::opening_transaction& w, const consumer& rule,
            const std::vector<order_event>& input, const batch_ids& ids,
            const std::vector<bool>& first, opened_batch& batch,
            batch_writes& writes) {
  auto types = rule.event_types();
  auto handles = [&](const std::string& type) {
    return std::find(types.begin(), types.end(), type) != types.end();
  };
  auto tx = rule.begin(w);
  std::vector<apply_outcome> out;
  std::set<std::string> applied; // events applied earlier in this batch
  size_t i = 0;
  for (; i < input.size(); ++i) {
    if (!first[i]) {
      out.push_back(apply_outcome::duplicate); // wrote nothing
      continue;
    }
    auto& o = batch.orders[ids.orders[i]];
    if (!o.exists)
      break; // order_missing: this event and the rest are not applied here
    auto missing = missing_before(o, ids.events[i], batch.fresh, applied);
    if (!missing.empty()) {
      // Queued again, in seq order, by the relay: they arrive in order.
      writes.unmark.push_back(ids.events[i]);
      writes.requeue_events.push_back(ids.events[i]);
      writes.requeue_seqs.insert(writes.requeue_seqs.end(), missing.begin(),
                                 missing.end());
      out.push_back(apply_outcome::deferred);
      continue;
    }
    // An event of a type the consumer does not handle is marked all the
    // same, so it is never applied later, and recorded as ignored.
    auto e = handles(input[i].event_type) ? tx->apply(input[i], o.state)
                                          : effect{"ignored", 0};
    o.state.effect_kinds.insert(e.kind);
    writes.effect_of(ids.events[i], ids.orders[i], e);
    applied.insert(ids.events[i]);
    out.push_back(apply_outcome::applied);
  }
  for (; i < input.size(); ++i)
    if (first[i])
      writes.unmark.push_back(ids.events[i]);
  tx->finish();
  return out;
}

/// The batch's writes as the statements COMMIT carries (close_with):
/// nothing reads them before. A changed status rides on the order's last
/// effect row; a rule changes a status only while applying an event, which
/// always has its row.
std::string closing_of(pqxx::connection_base& c, const std::string& consumer,
                       const batch_writes& wr,
                       const std::map<std::string, order_rows>& orders) {
  std::vector<std::optional<std::string>> statuses(wr.fx_events.size());
  std::map<std::string, size_t> last_effect;
  for (size_t k = 0; k < wr.fx_orders.size(); ++k)
    last_effect[wr.fx_orders[k]] = k;
  for (auto& [id, k] : last_effect)
    if (auto& o = orders.at(id); o.exists && o.state.status != o.read_status)
      statuses[k] = o.state.status;
  std::string closing;
  auto then = [&](const std::string& name,
                  const std::vector<std::string>& args) {
    closing +=
      (closing.empty() ? "" : "; ") + persistence::execute_sql(c, name, args);
  };
  if (!wr.fx_events.empty())
    then("write_effects",
         {consumer, array_literal(wr.fx_events), array_literal(wr.fx_orders),
          array_literal(wr.fx_kinds), array_literal(wr.fx_amounts),
          array_literal(wr.fx_quantities),
          persistence::nullable_array_literal(statuses)});
  if (!wr.unmark.empty())
    then("unmark", {consumer, array_literal(wr.unmark)});
  if (!wr.requeue_events.empty())
    then("requeue",
         {array_literal(wr.requeue_seqs), array_literal(wr.requeue_events)});
  return closing;
}

/// The rules for `input` (one partition's events, in offset order) inside
/// `w`, whose opening took the locks of their orders and ran the guard and
/// the reads; leaves `w` open, its last writes to travel with its COMMIT.
/// Returns the outcomes of the events before the first one whose order is
/// missing.
std::vector<apply_outcome> apply_in(persistence::opening_transaction& w,
                                    const consumer& rule,
                                    const std::string& consumer,
                                    const std::vector<order_event>& input,
                                    const batch_ids& ids) {
  auto batch = read_opened(w.opened());
  auto first = first_copies(ids.events, batch.fresh);
  if (std::none_of(first.begin(), first.end(), [](bool x) { return x; }))
    return std::vector<apply_outcome>(input.size(), apply_outcome::duplicate);
  batch_writes writes;
  auto out = apply_rules(w, rule, input, ids, first, batch, writes);
  w.close_with(closing_of(w.conn(), consumer, writes, batch.orders));
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

namespace {

consumer_ptr builtin(const std::string& name) {
  static const auto builtins = consumer_registry::with_builtins();
  if (auto c = builtins.find(name))
    return c;
  throw std::invalid_argument("no built-in consumer \"" + name + "\"");
}

} // namespace

event_applier::event_applier(std::string dsn, consumer_ptr consumer)
    : consumer_(std::move(consumer)), name_(consumer_->name()),
      db_(std::make_unique<session>(std::move(dsn),
                                    [rule = consumer_](pqxx::connection& c) {
                                      prepare(c);
                                      statements own(c, rule->name());
                                      rule->prepare(own);
                                    })) {
  // nop
}

event_applier::event_applier(std::string dsn,
                             const std::string& builtin_consumer)
    : event_applier(std::move(dsn), builtin(builtin_consumer)) {
  // nop
}

event_applier::~event_applier() = default;

apply_outcome event_applier::apply(const order_event& ev,
                                   const std::function<void()>& before_commit,
                                   delivery_position at) {
  check_type(ev);
  auto ids = ids_of({ev}, {at});
  // On failure run() forgets the session: a broken one is reopened by the
  // next apply().
  return db_->run([&](pqxx::connection& c) {
    persistence::opening_transaction w(c, lock_opening(c, name_, ids));
    auto out = apply_in(w, *consumer_, name_, {ev}, ids);
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
  auto ids = ids_of(evs, at);
  return db_->run([&](pqxx::connection& c) {
    persistence::opening_transaction w(c, lock_opening(c, name_, ids));
    auto out = apply_in(w, *consumer_, name_, evs, ids);
    if (before_commit)
      before_commit();
    w.commit();
    return out;
  });
}

} // namespace ef
