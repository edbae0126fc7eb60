#include "bench/e2e_latency.hpp"

#include "persistence/connection.hpp"

#include <cstdio>

namespace ef::bench {

namespace {

/// Where the spans' times come from: the CTE `picked` (each event, its
/// order's commit and its mark) and the time of an effect of
/// processed_events `p`.
struct clocks {
  const char* picked;
  const char* effect;
};

// With commit timestamps: order_items rows are never updated, so their xmin
// is the order's transaction; an outbox row's xmin, after the relay's mark,
// is the mark's transaction; processed_events rows are never updated either.
constexpr clocks commit_clocks{R"sql(
  picked AS (
    SELECT e.event_id, pg_xact_commit_timestamp(i.xmin) AS committed,
           pg_xact_commit_timestamp(e.xmin) AS published
    FROM orders o
    JOIN order_items i ON i.order_id = o.id AND i.line = 1
    JOIN outbox e ON e.order_id = o.id AND e.event_type = 'OrderCreated'
    WHERE o.customer_id LIKE $1))sql",
                               "pg_xact_commit_timestamp(p.xmin)"};

constexpr clocks insert_clocks{R"sql(
  picked AS (
    SELECT e.event_id, e.created_at AS committed, e.sent_at AS published
    FROM orders o
    JOIN outbox e ON e.order_id = o.id AND e.event_type = 'OrderCreated'
    WHERE o.customer_id LIKE $1))sql",
                               "p.processed_at"};

/// Every span of the picked events: to the mark (who = ''), to each
/// consumer's effect ($2 names the consumers).
std::string spans_of(const clocks& c) {
  return std::string("WITH ") + c.picked + R"sql(,
  spans AS (
    SELECT '' AS who, published - committed AS span FROM picked
    UNION ALL
    SELECT p.consumer, )sql" +
         c.effect + R"sql( - k.committed
    FROM picked k JOIN unnest($2::text[]) c(name) ON true
    JOIN processed_events p ON p.consumer = c.name AND p.event_id = k.event_id)
)sql";
}

/// Per order: the mark's span and the last effect's, of orders every
/// consumer applied ($2 names them), in commit order.
std::string per_order_of(const clocks& c) {
  return std::string("WITH ") + c.picked + R"sql(,
  effects AS (
    SELECT p.event_id, max()sql" +
         c.effect + R"sql() AS last, count(*) AS n
    FROM processed_events p JOIN picked k USING (event_id)
    WHERE p.consumer = ANY($2::text[]) GROUP BY p.event_id)
  SELECT extract(epoch FROM k.published - k.committed) * 1000,
         extract(epoch FROM e.last - k.committed) * 1000
  FROM picked k JOIN effects e USING (event_id)
  WHERE e.n = cardinality($2::text[]) ORDER BY k.committed)sql";
}

/// Whether the server records commit timestamps (else: insert clocks).
bool tracks_commits(pqxx::transaction_base& t) {
  return t.exec1("SELECT current_setting('track_commit_timestamp')")[0]
           .as<std::string>() == "on";
}

/// Percentiles of each kind of span, in milliseconds.
constexpr const char* percentiles = R"sql(
  SELECT who, count(*), percentile_cont(ARRAY[0.5, 0.9, 0.99])
           WITHIN GROUP (ORDER BY extract(epoch FROM span) * 1000),
         max(extract(epoch FROM span) * 1000)
  FROM spans GROUP BY who)sql";

} // namespace

e2e_latency measure_e2e(const std::string& dsn, const std::string& customers,
                        const std::vector<std::string>& consumers) {
  e2e_latency out;
  try {
    auto conn = persistence::open_connection(dsn);
    pqxx::read_transaction t(*conn);
    bool commits = tracks_commits(t);
    out.clock = commits ? "commit timestamps" : "insert clocks";
    auto r = t.exec_params(spans_of(commits ? commit_clocks : insert_clocks) +
                             percentiles,
                           customers, persistence::array_literal(consumers));
    for (const auto& row : r) {
      latency_summary s;
      s.samples = row[1].as<long>();
      // percentile_cont over an array answers {p50,p90,p99}.
      auto cut = row[2].as<std::string>();
      std::sscanf(cut.c_str(), "{%lf,%lf,%lf}", &s.p50_ms, &s.p90_ms,
                  &s.p99_ms);
      s.max_ms = row[3].as<double>();
      auto who = row[0].as<std::string>();
      if (who.empty())
        out.published = s;
      else
        out.consumers[who] = s;
    }
  } catch (...) {
    persistence::rethrow_as_db_error();
  }
  return out;
}

std::vector<order_spans>
spans_per_order(const std::string& dsn, const std::string& customers,
                const std::vector<std::string>& consumers) {
  std::vector<order_spans> out;
  try {
    auto conn = persistence::open_connection(dsn);
    pqxx::read_transaction t(*conn);
    auto r = t.exec_params(
      per_order_of(tracks_commits(t) ? commit_clocks : insert_clocks),
      customers, persistence::array_literal(consumers));
    for (const auto& row : r)
      out.push_back({row[0].as<double>(), row[1].as<double>()});
  } catch (...) {
    persistence::rethrow_as_db_error();
  }
  return out;
}

} // namespace ef::bench
