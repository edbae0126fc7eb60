#include "persistence/connection.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

using namespace ef;

namespace {

std::string show_timeout(pqxx::transaction_base& t) {
  return t.exec1("SHOW statement_timeout")[0].as<std::string>();
}

/// A connection to `db`, which now has an empty table `written (x int)`.
std::unique_ptr<pqxx::connection> with_written_table(test::database& db) {
  auto c = persistence::open_connection(db.dsn());
  {
    pqxx::work t(*c);
    t.exec("CREATE TABLE written (x int)");
    t.commit();
  }
  return c;
}

} // namespace

TEST_CASE("a_transaction_opening_runs_inside_it_and_a_failed_opening_leaves_"
          "the_session_outside_any_transaction") {
  test::database db;
  auto c = with_written_table(db);
  {
    // The opening is part of the transaction: SET LOCAL holds until its end.
    persistence::opening_transaction t(*c,
                                       "SET LOCAL statement_timeout = 4321");
    CHECK(show_timeout(t) == "4321ms");
    t.exec("INSERT INTO written VALUES (1)");
    t.commit();
  }
  {
    pqxx::work t(*c);
    CHECK(show_timeout(t) == "0");
  }
  CHECK(db.scalar<long>("SELECT count(*) FROM written") == 1);

  // BEGIN succeeded, the opening failed: without a ROLLBACK the session
  // would stay in a failed transaction block libpqxx knows nothing of, and
  // the next transaction on it would fail ("current transaction is
  // aborted").
  CHECK_THROWS_WITH(persistence::opening_transaction(*c, "SELECT 1 / 0"),
                    Catch::Contains("division by zero"));
  {
    persistence::opening_transaction t(*c, "");
    t.exec("INSERT INTO written VALUES (1)");
    t.commit();
  }
  CHECK(db.scalar<long>("SELECT count(*) FROM written") == 2);
  // And nothing of the failed one is left open: a lock its opening took is
  // released with it.
  CHECK_THROWS(persistence::opening_transaction(
    *c, "SELECT pg_advisory_xact_lock(77, 1); SELECT 1 / 0"));
  CHECK(db.scalar<long>("SELECT count(*) FROM pg_locks WHERE locktype = "
                        "'advisory' AND objid = 1 AND classid = 77") == 0);
}

TEST_CASE("an_opening_s_rows_come_back_and_a_closing_travels_with_commit_a_"
          "failed_closing_commits_nothing") {
  test::database db;
  auto c = with_written_table(db);
  c->prepare("add", "INSERT INTO written VALUES ($1::int)");
  c->prepare("count", "SELECT count(*) FROM written WHERE x = $1::int");
  {
    // The opening's last statement is a prepared one, run as EXECUTE with
    // quoted literals: its rows are opened().
    persistence::opening_transaction t(
      *c, persistence::execute_sql(*c, "add", {"1"}) + "; " +
            persistence::execute_sql(*c, "count", {"1"}));
    REQUIRE(t.opened().size() == 1);
    CHECK(t.opened()[0][0].as<long>() == 1);
    t.close_with(persistence::execute_sql(*c, "add", {"2"}));
    // Nothing of the closing runs before commit().
    CHECK(t.exec1("SELECT count(*) FROM written")[0].as<long>() == 1);
    t.commit();
  }
  CHECK(db.scalar<long>("SELECT count(*) FROM written") == 2);
  {
    // A closing that fails: COMMIT never runs, and the error names the
    // statement's cause; the session is usable at once.
    persistence::opening_transaction t(*c, "INSERT INTO written VALUES (3)");
    t.close_with(persistence::execute_sql(*c, "add", {"not a number"}));
    CHECK_THROWS_WITH(t.commit(), Catch::Contains("invalid input syntax"));
  }
  CHECK(db.scalar<long>("SELECT count(*) FROM written") == 2);
  {
    persistence::opening_transaction t(*c, "");
    CHECK(t.opened().empty());
    t.exec("INSERT INTO written VALUES (4)");
    t.commit();
  }
  CHECK(db.scalar<long>("SELECT count(*) FROM written WHERE x = 4") == 1);
  // A quote in an argument stays inside its literal.
  CHECK(persistence::execute_sql(*c, "add", {"it's"}) ==
        "EXECUTE \"add\"('it''s')");
}
