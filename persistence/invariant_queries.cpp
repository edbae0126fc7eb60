#include "persistence/invariant_queries.hpp"

#include "persistence/connection.hpp"

namespace ef::persistence {

namespace {

/// Runs `sql` (columns: order_id, event_id, consumer, detail) and appends
/// one violation per row.
void collect(pqxx::read_transaction& t, const std::string& invariant,
             const std::string& what, const std::string& sql,
             const std::string& consumers, std::vector<violation>& out) {
  auto r = t.exec_params(sql, consumers);
  for (const auto& row : r) {
    auto text = [&](int i) {
      return row[i].is_null() ? std::string{} : row[i].as<std::string>();
    };
    auto detail = text(3);
    out.push_back({invariant,
                   detail.empty() ? what : what + " (" + detail + ")", text(0),
                   text(1), text(2)});
  }
}

} // namespace

namespace {

durable_counts counts_in(pqxx::transaction_base& t) {
  auto c = t.exec1(
    "SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM outbox), "
    "(SELECT count(*) FROM outbox WHERE sent_at IS NULL), "
    "(SELECT count(*) FROM processed_events), "
    "(SELECT count(*) FROM business_effects)");
  return {c[0].as<long>(), c[1].as<long>(), c[2].as<long>(), c[3].as<long>(),
          c[4].as<long>()};
}

} // namespace

durable_counts read_counts(const std::string& dsn) {
  try {
    auto conn = open_connection(dsn);
    pqxx::read_transaction t(*conn);
    return counts_in(t);
  } catch (...) {
    rethrow_as_db_error();
  }
}

std::vector<violation> check_database(const std::string& dsn,
                                      const std::vector<std::string>& consumers,
                                      durable_counts& counts) {
  std::vector<violation> out;
  try {
    auto conn = open_connection(dsn);
    // One snapshot for every check, so they agree with each other.
    pqxx::read_transaction t(*conn);
    t.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    counts = counts_in(t);
    auto names = array_literal(consumers);
    collect(t, "I1", "order without its OrderCreated outbox row",
            "SELECT o.id, NULL, NULL, NULL FROM orders o WHERE $1::text[] IS "
            "NOT NULL AND NOT EXISTS (SELECT 1 FROM outbox e WHERE "
            "e.order_id = o.id AND e.event_type = 'OrderCreated')",
            names, out);
    collect(t, "I1", "OrderCreated outbox row without its order",
            "SELECT e.order_id, e.event_id, NULL, NULL FROM outbox e WHERE "
            "$1::text[] IS NOT NULL AND e.event_type = 'OrderCreated' AND NOT "
            "EXISTS (SELECT 1 FROM orders o WHERE o.id = e.order_id)",
            names, out);
    collect(t, "I2", "outbox row never published",
            "SELECT order_id, event_id, NULL, 'attempts ' || publish_attempts "
            "|| coalesce(', last error: ' || last_error, '') FROM outbox "
            "WHERE $1::text[] IS NOT NULL AND sent_at IS NULL ORDER BY seq",
            names, out);
    // Counted per (consumer, event) once, then joined: linear in the rows
    // (a correlated count per outbox row is quadratic without an index).
    // An event an operator discarded is decided too: its one mark says
    // "discarded" and it has no effect.
    collect(
      t, "I3", "event not applied exactly once",
      "WITH m AS (SELECT consumer, event_id, count(*) AS n, "
      "count(*) FILTER (WHERE outcome = 'discarded') AS discarded FROM "
      "processed_events WHERE consumer = ANY($1::text[]) GROUP BY 1, 2), "
      "f AS (SELECT consumer, event_id, count(*) AS n FROM "
      "business_effects WHERE consumer = ANY($1::text[]) GROUP BY 1, 2) "
      "SELECT o.order_id, o.event_id, c.consumer, coalesce(m.n, 0) || "
      "' marks' || CASE WHEN m.discarded > 0 THEN ' (discarded)' ELSE "
      "'' END || ', ' || coalesce(f.n, 0) || ' effects' FROM outbox o "
      "CROSS JOIN unnest($1::text[]) AS c(consumer) LEFT JOIN m ON "
      "m.consumer = c.consumer AND m.event_id = o.event_id LEFT JOIN f ON "
      "f.consumer = c.consumer AND f.event_id = o.event_id WHERE "
      "o.sent_at IS NOT NULL AND (coalesce(m.n, 0) <> 1 OR coalesce(f.n, "
      "0) <> 1 - coalesce(m.discarded, 0)) ORDER BY o.seq",
      names, out);
    collect(t, "I3", "business effect for an event the outbox never had",
            "SELECT b.order_id, b.event_id, b.consumer, b.kind FROM "
            "business_effects b WHERE $1::text[] IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM outbox o WHERE o.event_id = b.event_id)",
            names, out);
    collect(t, "I4", "events of an order applied out of outbox order",
            "SELECT b.order_id, NULL, b.consumer, 'applied seqs ' || "
            "array_agg(o.seq ORDER BY b.id)::text FROM business_effects b "
            "JOIN outbox o USING (event_id) WHERE b.consumer = ANY($1::text[]) "
            "GROUP BY b.consumer, b.order_id HAVING array_agg(o.seq ORDER BY "
            "b.id) <> array_agg(o.seq ORDER BY o.seq)",
            names, out);
  } catch (...) {
    rethrow_as_db_error();
  }
  return out;
}

std::set<std::pair<std::string, std::string>>
processed_marks(const std::string& dsn) {
  std::set<std::pair<std::string, std::string>> out;
  try {
    auto conn = open_connection(dsn);
    pqxx::read_transaction t(*conn);
    for (const auto& row :
         t.exec("SELECT consumer, event_id::text FROM processed_events"))
      out.emplace(row[0].as<std::string>(), row[1].as<std::string>());
  } catch (...) {
    rethrow_as_db_error();
  }
  return out;
}

} // namespace ef::persistence
