#include "bench/sql_baselines.hpp"

#include "applier/event_applier.hpp"
#include "consumers/billing.hpp"
#include "persistence/connection.hpp"
#include "persistence/lock_classes.hpp"
#include "persistence/migrations.hpp"
#include "persistence/order_store.hpp"
#include "persistence/outbox_store.hpp"

#include <cctype>
#include <map>
#include <stdexcept>

namespace ef::bench {

// The API and relay statements are persistence/, the consumers' ef::sql.
namespace sql = persistence::sql;

namespace {

/// `text` with every $N replaced by args.at(N). pgbench then turns the
/// `:variables` in those expressions into parameters of its own prepared
/// statement.
std::string bind(const std::string& text,
                 const std::map<int, std::string>& args) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '$' && i + 1 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      size_t j = i + 1;
      while (j < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[j])))
        ++j;
      out += "(" + args.at(std::stoi(text.substr(i + 1, j - i - 1))) + ")";
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

/// pgbench turns every ":name" in SQL into a parameter, also inside string
/// literals; a name the script never sets fails the run. Refuses such names
/// up front, with the statement that holds them.
void check_variables(const std::string& statement) {
  auto ours = [](const std::string& v) {
    return v == "r" || v == "total" || v == "shard" || v == "seqs" ||
           ((v[0] == 'n' || v[0] == 'x') && v.size() > 1 &&
            std::isdigit(static_cast<unsigned char>(v[1])));
  };
  for (size_t i = 0; i + 1 < statement.size(); ++i) {
    if (statement[i] != ':' || statement[i + 1] == ':') {
      continue;
    }
    if (i > 0 && statement[i - 1] == ':')
      continue;
    size_t j = i + 1;
    while (j < statement.size() &&
           (std::isalnum(static_cast<unsigned char>(statement[j])) ||
            statement[j] == '_'))
      ++j;
    auto name = statement.substr(i + 1, j - i - 1);
    if (!name.empty() && !ours(name))
      throw std::logic_error("pgbench would read \":" + name +
                             "\" as a variable in: " + statement);
  }
}

/// One SQL command of a pgbench script. pgbench ends a command at a
/// semicolon; a line break inside it is fine.
std::string command(const std::string& statement) {
  check_variables(statement);
  return statement + ";\n";
}

/// A pgbench random number whose md5 names one entity (no collisions in
/// practice, so every API order and every consumer mark is new).
constexpr const char* fresh_range = "random(1, 4611686018427387903)";

std::string uuid_of(const std::string& prefix, const std::string& var) {
  return "md5('" + prefix + "' || :" + var + "::text)::uuid";
}

// JSON literals with a space after every colon: pgbench would read ":2" as a
// variable named 2.
constexpr const char* items_json =
  R"('[{"sku": "sku-7", "qty": 2, "price_cents": 450}]')";
constexpr const char* payload_json =
  R"('{"order_id": "0190c1d2-aaaa-7bbb-8ccc-0123456789ab", "customer_id": "bench-7", "total_cents": 900, "items": [{"sku": "sku-7", "qty": 2, "price_cents": 450}]}')";
constexpr const char* headers_json =
  R"('{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}')";

} // namespace

std::string scratch_dsn(const std::string& dsn) {
  return persistence::with_dsn_param(
    dsn, "options", std::string("-csearch_path=") + scratch_schema);
}

void prepare_scratch(const std::string& dsn, long orders, int shards) {
  drop_scratch(dsn);
  try {
    auto conn = persistence::open_connection(dsn);
    pqxx::nontransaction(*conn).exec(std::string("CREATE SCHEMA ") +
                                     scratch_schema);
  } catch (...) {
    persistence::rethrow_as_db_error();
  }
  persistence::migrate(scratch_dsn(dsn));
  try {
    auto conn = persistence::open_connection(scratch_dsn(dsn));
    pqxx::work w(*conn);
    w.exec_params(
      "INSERT INTO orders (id, customer_id, status, total_cents) "
      "SELECT md5('o' || n)::uuid, 'bench-' || n % 97, 'created', 900 "
      "FROM generate_series(1, $1::bigint) n",
      orders);
    w.exec_params("INSERT INTO order_items (order_id, line, sku, qty, "
                  "price_cents) SELECT md5('o' || n)::uuid, 1, 'sku-7', 2, "
                  "450 FROM generate_series(1, $1::bigint) n",
                  orders);
    w.exec_params(
      std::string("INSERT INTO outbox (event_id, order_id, shard, event_type, "
                  "payload, headers) SELECT md5('e' || n)::uuid, "
                  "md5('o' || n)::uuid, n % $2, 'OrderCreated', ") +
        payload_json + ", " + headers_json +
        " FROM generate_series(1, $1::bigint) n",
      orders, shards);
    w.commit();
    // Only the seeded tables: a fresh database has never analyzed its empty
    // ones either (ANALYZE would tell the planner they stay empty).
    pqxx::nontransaction(*conn).exec(
      "VACUUM ANALYZE orders, order_items, outbox");
  } catch (...) {
    persistence::rethrow_as_db_error();
  }
}

void drop_scratch(const std::string& dsn) {
  try {
    auto conn = persistence::open_connection(dsn);
    pqxx::nontransaction(*conn).exec(std::string("DROP SCHEMA IF EXISTS ") +
                                     scratch_schema + " CASCADE");
  } catch (...) {
    persistence::rethrow_as_db_error();
  }
}

namespace {

/// What one consumer transaction writes, as SQL array expressions of one
/// element per event.
struct consumer_writes {
  std::string events, orders, partitions, offsets, kinds, amounts, quantities,
    statuses;
};

/// One consumer transaction with the statements event_applier runs: the
/// order locks sent with BEGIN (pgbench sends BEGIN alone), the guard and
/// reads, the effects and status updates, then `business` (the plug-in's
/// own statements, e.g. billing's balances).
std::string consumer_transaction(const std::string& consumer,
                                 const consumer_writes& w,
                                 const std::string& business = "") {
  std::string s = "BEGIN;\n";
  s += command(
    ef::sql::lock_orders(std::to_string(persistence::consumer_order_lock_class),
                         consumer, w.orders));
  s += command(bind(ef::sql::mark_and_read, {{1, consumer},
                                             {2, w.events},
                                             {3, w.partitions},
                                             {4, w.offsets},
                                             {5, w.orders}}));
  s += command(bind(ef::sql::write_effects, {{1, consumer},
                                             {2, w.events},
                                             {3, w.orders},
                                             {4, w.kinds},
                                             {5, w.amounts},
                                             {6, w.quantities},
                                             {7, w.statuses}}));
  if (!business.empty())
    s += command(business);
  s += "COMMIT;\n";
  return s;
}

/// The create statement of one order: ID uuid_of("a", r), event ID
/// uuid_of("b", r), on `shard` (an expression).
std::string create_statement(const std::string& shard) {
  return command(bind(sql::create_order, {{1, "''"},
                                          {2, "''"},
                                          {3, uuid_of("a", "r")},
                                          {4, uuid_of("b", "r")},
                                          {5, "'bench-' || :r::bigint % 97"},
                                          {6, ":total"},
                                          {7, items_json},
                                          {8, shard},
                                          {9, "'OrderCreated'"},
                                          {10, payload_json},
                                          {11, headers_json}}));
}

/// The claim as pgbench can run it: pgbench would read ":MI" of the
/// timestamp format as a variable; to_char prints a quoted ":" just the same.
std::string claim_statement() {
  std::string claim = sql::unsent;
  auto at = claim.find("HH24:MI:SS");
  if (at != std::string::npos)
    claim.replace(at, 10, "HH24\":\"MI\":\"SS");
  return claim;
}

/// The mark transaction of the rows in `seqs` (an array expression of
/// `rows` elements) with the announcement `announce` (a text[] expression).
std::string mark_transaction(const std::string& seqs, int rows,
                             const std::string& announce) {
  auto n = std::to_string(rows);
  std::string s = "BEGIN;\n";
  s += command(sql::epoch_guard(std::to_string(persistence::epoch_lock_class)));
  s += command(
    bind(sql::mark_sent, {{1, "1"},
                          {2, seqs},
                          {3, "array_fill(0, ARRAY[" + n + "])"},
                          {4, "array_fill(0::bigint, ARRAY[" + n + "])"},
                          {5, std::to_string(persistence::relay_lock_class)},
                          {6, ":shard"},
                          {7, announce}}));
  s += "COMMIT;\n";
  return s;
}

} // namespace

std::string api_order_script(int shards) {
  std::string s = std::string("\\set r ") + fresh_range + "\n";
  s += "\\set total random(100, 100000)\n";
  s += "BEGIN;\n";
  s += create_statement(":r::bigint % " + std::to_string(shards));
  s += "COMMIT;\n";
  return s;
}

std::string consumer_script(long seeded_orders, int clients,
                            int events_per_tx) {
  auto range = std::to_string(seeded_orders / clients);
  std::string s;
  consumer_writes w;
  for (int j = 0; j < events_per_tx; ++j) {
    auto n = "n" + std::to_string(j), x = "x" + std::to_string(j);
    s +=
      "\\set " + n + " :client_id * " + range + " + random(1, " + range + ")\n";
    s += "\\set " + x + " " + fresh_range + "\n";
    auto sep = j ? ", " : "";
    w.events += sep + uuid_of("x", x) + "::text";
    w.orders += sep + uuid_of("o", n) + "::text";
    w.statuses += sep + std::string("'processed'");
    w.partitions += sep + std::string("0");
    w.kinds += sep + std::string("'fulfilled'");
    w.amounts += sep + std::string("0");
  }
  auto array = [](const std::string& items) { return "ARRAY[" + items + "]"; };
  w.events = array(w.events);
  w.orders = array(w.orders);
  w.partitions = array(w.partitions);
  w.kinds = array(w.kinds);
  w.quantities = w.amounts = array(w.amounts);
  w.statuses = array(w.statuses);
  // Any offsets will do; variables there would count against pgbench's 255
  // arguments per statement.
  w.offsets = "ARRAY(SELECT generate_series(1, " +
              std::to_string(events_per_tx) + "))::bigint[]";
  return s + consumer_transaction("'fulfillment'", w);
}

std::string floor_script(int shards,
                         const std::vector<std::string>& consumers) {
  std::string s = std::string("\\set r ") + fresh_range + "\n";
  s += "\\set total random(100, 100000)\n";
  // Client c is the relay of shard c and writes its orders there, so its
  // claim finds exactly the row it just committed.
  s += "\\set shard :client_id % " + std::to_string(shards) + "\n";
  s += "BEGIN;\n" + create_statement(":shard") + "COMMIT;\n";
  // The claim reads outside a transaction, as the relay does; the shard's
  // session lock rides along (a relay takes it once per session; taking it
  // again is re-entrant and costs no round trip here).
  auto query = "SELECT coalesce(array_agg(seq), '{}') AS seqs, "
               "pg_try_advisory_lock(" +
               std::to_string(persistence::relay_lock_class) +
               ", :shard) AS owner FROM (" +
               bind(claim_statement(), {{1, ":shard"}, {2, "1"}, {3, "'{}'"}}) +
               ") claim";
  check_variables(query);
  s += query + "\n\\gset\n";
  // The announcement "0:1" (a relay announces what it published); chr(58)
  // is the colon pgbench would read as a variable.
  s += mark_transaction(":seqs", 1, "ARRAY['0' || chr(58) || '1']");
  auto order = "ARRAY[" + uuid_of("a", "r") + "::text]";
  auto event = "ARRAY[" + uuid_of("b", "r") + "::text]";
  for (auto& name : consumers) {
    consumer_writes w{event,
                      order,
                      "ARRAY[0]",
                      "ARRAY[1::bigint]",
                      "ARRAY['applied']",
                      "ARRAY[0::bigint]",
                      "ARRAY[0::bigint]",
                      "ARRAY[NULL::text]"};
    std::string business;
    if (name == "billing") {
      w.kinds = "ARRAY['debit']";
      w.amounts = "ARRAY[:total::bigint]";
      business = bind(ef::sql::adjust_balances,
                      {{1, "ARRAY['bench-' || :r::bigint % 97]"},
                       {2, "ARRAY[-:total::bigint]"}});
    } else if (name == "fulfillment") {
      w.kinds = "ARRAY['fulfilled']";
      w.quantities = "ARRAY[2::bigint]";
      w.statuses = "ARRAY['processed']";
    }
    s += consumer_transaction("'" + name + "'", w, business);
  }
  return s;
}

std::string relay_script(int shards, int batch) {
  auto b = std::to_string(batch);
  std::string s = "\\set shard :client_id % " + std::to_string(shards) + "\n";
  // The relay reads the claimed rows outside a transaction and publishes
  // them before it marks; pgbench keeps only their seqs.
  auto query = "SELECT coalesce(array_agg(seq), '{}') AS seqs FROM (" +
               bind(claim_statement(), {{1, ":shard"}, {2, b}, {3, "'{}'"}}) +
               ") claim";
  check_variables(query);
  s += query + "\n\\gset\n";
  // The mark needs the shard's session lock, as a relay holds it; taking
  // it again is re-entrant and costs the baseline one more statement.
  s += "SELECT pg_try_advisory_lock(" +
       std::to_string(persistence::relay_lock_class) + ", :shard);\n";
  return s + mark_transaction(":seqs", batch, "'{}'");
}

} // namespace ef::bench
