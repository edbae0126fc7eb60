#include "bench/sql_baselines.hpp"

#include "consumers/event_applier.hpp"
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

std::string api_order_script(int shards) {
  std::string s = std::string("\\set r ") + fresh_range + "\n";
  s += "\\set total random(100, 100000)\n";
  s += "BEGIN;\n";
  s += command(
    bind(sql::create_order, {{1, "''"},
                             {2, "''"},
                             {3, uuid_of("a", "r")},
                             {4, uuid_of("b", "r")},
                             {5, "'bench-' || :r::bigint % 97"},
                             {6, ":total"},
                             {7, items_json},
                             {8, ":r::bigint % " + std::to_string(shards)},
                             {9, "'OrderCreated'"},
                             {10, payload_json},
                             {11, headers_json}}));
  s += "COMMIT;\n";
  return s;
}

std::string consumer_script(long seeded_orders, int clients,
                            int events_per_tx) {
  auto range = std::to_string(seeded_orders / clients);
  std::string s, events, orders, statuses, kinds, amounts, partitions, offsets;
  for (int j = 0; j < events_per_tx; ++j) {
    auto n = "n" + std::to_string(j), x = "x" + std::to_string(j);
    s +=
      "\\set " + n + " :client_id * " + range + " + random(1, " + range + ")\n";
    s += "\\set " + x + " " + fresh_range + "\n";
    auto sep = j ? ", " : "";
    events += sep + uuid_of("x", x) + "::text";
    orders += sep + uuid_of("o", n) + "::text";
    statuses += sep + std::string("'processed'");
    partitions += sep + std::string("0");
    kinds += sep + std::string("'fulfilled'");
    amounts += sep + std::string("0");
  }
  events = "ARRAY[" + events + "]";
  orders = "ARRAY[" + orders + "]";
  partitions = "ARRAY[" + partitions + "]";
  // Any offsets will do; variables there would count against pgbench's 255
  // arguments per statement.
  offsets = "ARRAY(SELECT generate_series(1, " + std::to_string(events_per_tx) +
            "))::bigint[]";
  auto consumer = "'fulfillment'";
  // pgbench sends BEGIN alone; EventForge sends the locks with it.
  s += "BEGIN;\n";
  s += command(ef::sql::lock_orders(
    std::to_string(persistence::consumer_order_lock_class), consumer, orders));
  s += command(bind(
    ef::sql::mark_and_read,
    {{1, consumer}, {2, events}, {3, partitions}, {4, offsets}, {5, orders}}));
  s += command(bind(ef::sql::write_effects, {{1, consumer},
                                             {2, events},
                                             {3, orders},
                                             {4, "ARRAY[" + kinds + "]"},
                                             {5, "ARRAY[" + amounts + "]"},
                                             {6, "ARRAY[" + amounts + "]"},
                                             {7, "ARRAY[" + statuses + "]"}}));
  s += "COMMIT;\n";
  return s;
}

std::string relay_script(int shards, int batch) {
  auto b = std::to_string(batch);
  std::string s = "\\set shard :client_id % " + std::to_string(shards) + "\n";
  // The relay reads the claimed rows outside a transaction and publishes
  // them before it marks; pgbench keeps only their seqs.
  // pgbench would read ":MI" of the timestamp format as a variable;
  // to_char prints a quoted ":" just the same.
  std::string claim = sql::unsent;
  auto at = claim.find("HH24:MI:SS");
  if (at != std::string::npos)
    claim.replace(at, 10, "HH24\":\"MI\":\"SS");
  auto query = "SELECT coalesce(array_agg(seq), '{}') AS seqs FROM (" +
               bind(claim, {{1, ":shard"}, {2, b}}) + ") claim";
  check_variables(query);
  s += query + "\n\\gset\n";
  // The mark needs the shard's session lock, as a relay holds it; taking
  // it again is re-entrant and costs the baseline one more statement.
  auto relay_class = std::to_string(persistence::relay_lock_class);
  s += "SELECT pg_try_advisory_lock(" + relay_class + ", :shard);\n";
  s += "BEGIN;\n";
  s += command(sql::epoch_guard(std::to_string(persistence::epoch_lock_class)));
  s += command(
    bind(sql::mark_sent, {{1, "1"},
                          {2, ":seqs"},
                          {3, "array_fill(0, ARRAY[" + b + "])"},
                          {4, "array_fill(0::bigint, ARRAY[" + b + "])"},
                          {5, relay_class},
                          {6, ":shard"},
                          {7, "'{}'"}}));
  s += "COMMIT;\n";
  return s;
}

} // namespace ef::bench
