// The pgbench scripts `eventforge bench` builds from the hot paths' own SQL,
// and the connection-string and array helpers they rely on.

#include "bench/sql_baselines.hpp"
#include "persistence/connection.hpp"

#include <catch2/catch.hpp>

using namespace ef;

TEST_CASE("pgbench_scripts_build_from_the_hot_paths_sql_with_no_stray_"
          "variables") {
  // Building a script checks every ":name" pgbench would substitute: a
  // change to the SQL that adds one (e.g. a time format "HH24:MI") fails
  // here, not after minutes of a bench run.
  auto api = bench::api_order_script(4);
  CHECK(api.find("BEGIN;\n") != std::string::npos);
  CHECK(api.find("INSERT INTO orders") != std::string::npos);
  CHECK(api.find("$1") == std::string::npos); // every parameter bound
  auto one = bench::consumer_script(1200, 12, 1);
  auto hundred = bench::consumer_script(1200, 12, 100);
  CHECK(one.find(":x0") != std::string::npos);
  CHECK(hundred.find(":x99") != std::string::npos);
  CHECK(hundred.find(":x100") == std::string::npos);
  // The same statements for 1 event or 100: only the arrays grow.
  auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (auto at = s.find(what); at != std::string::npos;
         at = s.find(what, at + 1))
      ++n;
    return n;
  };
  CHECK(count(one, ";\n") == count(hundred, ";\n"));
  auto relay = bench::relay_script(4, 500);
  CHECK(relay.find("\\gset") != std::string::npos);
  CHECK(relay.find("LIMIT (500)") != std::string::npos);
}

TEST_CASE("connection_string_parameters_are_quoted_or_percent_encoded") {
  CHECK(persistence::with_dsn_param("postgresql://u@h:5/db", "options",
                                    "-csearch_path=a b") ==
        "postgresql://u@h:5/db?options=-csearch_path%3Da%20b");
  CHECK(persistence::with_dsn_param("postgresql://u@h/db?sslmode=disable",
                                    "connect_timeout", "3") ==
        "postgresql://u@h/db?sslmode=disable&connect_timeout=3");
  CHECK(persistence::with_dsn_param("host=h dbname=d", "options", "-c x='y'") ==
        "host=h dbname=d options='-c x=\\'y\\''");
  CHECK(persistence::with_connect_timeout("host=h connect_timeout=9", 2) ==
        "host=h connect_timeout=9");
}

TEST_CASE("text_array_literals_quote_every_element") {
  CHECK(persistence::array_literal(std::vector<std::string>{
          "plain", "a,b", "q\"uote", "back\\slash", "{brace}", ""}) ==
        R"({"plain","a,b","q\"uote","back\\slash","{brace}",""})");
  CHECK(persistence::array_literal(std::vector<std::string>{}) == "{}");
}
