// Operator answers within their contract (docs/dlq.md, "What replay and
// discard answer"), on real PostgreSQL, the Kafka protocol and the real
// tree: a replay that the broker does not acknowledge answers "pending" in
// time, and reads are answered meanwhile; a discard from the command line
// answers from the database and says its release is pending; groups have a
// short id the command line takes; the audit trail names the effective
// user.

#include "tests/integration/dlq_fixture.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <future>

using namespace ef;
using ef::test::dlq_fixture;
using namespace std::chrono_literals;

namespace {

/// Parks billing's and fulfillment's copies of an order's creation (a
/// permanent failure) and, behind each, its cancellation; lifts the cause.
/// Returns billing's two entries, head first.
std::pair<long, long> park_created_and_cancelled(dlq_fixture& f,
                                                 const std::string& customer,
                                                 std::string& order) {
  f.add_failing_trigger(customer, "23514", 1000000);
  order = f.place(customer);
  REQUIRE(
    test::post_json(f.t->url(), "/orders/" + order + "/cancel", "").first ==
    202);
  f.settle();
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM dlq_events WHERE order_key = '" +
                   order + "' AND status = 'parked'") == 4;
  }));
  f.db.exec("DROP TRIGGER fail_" + customer + " ON business_effects");
  auto billing = [&](const char* cls) {
    return f.db.scalar<long>("SELECT id FROM dlq_events WHERE consumer = "
                             "'billing' AND order_key = '" +
                             order + "' AND error_class = '" + cls + "'");
  };
  return {billing("db_permanent"), billing("parked_behind")};
}

std::string effective_user() {
  auto* pw = getpwuid(geteuid());
  return pw ? pw->pw_name : "uid " + std::to_string(geteuid());
}

} // namespace

TEST_CASE("a_replay_the_broker_does_not_acknowledge_answers_pending_in_time_"
          "and_reads_are_answered_meanwhile") {
  // A delivery timeout (8 s) past the request's 5 s.
  dlq_fixture f(1, {}, 1, 8000);
  std::string order;
  // Not structured bindings: C++17 lambdas cannot capture those (clang).
  auto entries = park_created_and_cancelled(f, "slow", order);
  auto head = entries.first, behind = entries.second;
  // No broker answers: a publish would wait for its whole delivery timeout.
  f.broker->set_down(true);
  std::atomic<bool> replay_answered{false};
  auto replay = std::async(std::launch::async, [&, id = head] {
    httplib::Client cli(f.t->url());
    cli.set_read_timeout(60, 0);
    auto res =
      cli.Post(("/admin/dlq/" + std::to_string(id) + "/replay").c_str(),
               {{"Authorization", "Bearer s3cret"}}, "", "text/plain");
    replay_answered = true;
    return res ? std::make_pair(res->status, res->body)
               : std::make_pair(-1, std::string("no answer"));
  });
  // Reads while the replay waits for the broker: answered, and before it.
  REQUIRE(test::wait_until([&] {
    return f.db.scalar<std::string>("SELECT status FROM dlq_events WHERE id "
                                    "= " +
                                    std::to_string(head)) == "replaying";
  }));
  auto [ls, list] = f.admin("GET", "/admin/dlq");
  auto [ss, shown] = f.admin("GET", "/admin/dlq/" + std::to_string(behind));
  bool read_first = !replay_answered;
  CHECK(ls == 200);
  CHECK(ss == 200);
  CHECK(read_first);
  // The replay says what happened: recorded, not acknowledged, pending;
  // not "outcome unknown".
  auto [rs, rb] = replay.get();
  INFO(rb);
  CHECK(rs == 200);
  auto answer = nlohmann::json::parse(rb, nullptr, false);
  CHECK(answer["done"] == false);
  CHECK(answer["status"] == "replaying");
  // Once a broker is back, the DLQ handler publishes it; the order's
  // events are applied in order, once.
  f.broker->set_down(false);
  REQUIRE(test::wait_until(
    [&] {
      return f.count("SELECT count(*) FROM business_effects WHERE consumer "
                     "= 'billing' AND order_id = '" +
                     order + "'") == 2;
    },
    60s));
  CHECK(f.db.scalar<std::string>(
          "SELECT string_agg(kind, ',' ORDER BY id) FROM business_effects "
          "WHERE consumer = 'billing' AND order_id = '" +
          order + "'") == "debit,refund");
}

TEST_CASE("a_discard_from_the_command_line_answers_from_the_database_and_"
          "its_release_is_published_by_the_running_system") {
  dlq_fixture f(1);
  std::string order;
  auto entries = park_created_and_cancelled(f, "cli", order);
  auto head = entries.first, behind = entries.second;
  // No --kafka.brokers, and no USER: the effective user is still named.
  auto [rc, out] = test::run_command(
    "env -u USER " + test::eventforge_binary() + " dlq discard " +
    std::to_string(head) + " --database.url='" + f.db.dsn() + "'");
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("discarded entry " + std::to_string(head)) &&
                    Catch::Contains("the DLQ handler publishes it"));
  CHECK(f.count("SELECT count(*) FROM dlq_actions WHERE dlq_id = " +
                std::to_string(head) +
                " AND action = 'discard' AND actor = 'cli:" + effective_user() +
                "'") == 1);
  // The tree's DLQ handler publishes the recorded release; billing applies
  // the cancel by the late-event rule (no debit happened: nothing refunded).
  // Both: the handler marks the release replayed after the broker's ack,
  // and billing may apply it before that commit.
  REQUIRE(test::wait_until(
    [&] {
      return f.count("SELECT count(*) FROM business_effects WHERE consumer "
                     "= 'billing' AND order_id = '" +
                     order + "'") == 1 &&
             f.db.scalar<std::string>(
               "SELECT status FROM dlq_events WHERE id = " +
               std::to_string(behind)) == "replayed";
    },
    30s));
  CHECK(f.db.scalar<std::string>(
          "SELECT kind FROM business_effects WHERE consumer = 'billing' AND "
          "order_id = '" +
          order + "'") == "refund_skipped");
}

TEST_CASE("a_group_is_named_by_a_short_id_on_one_line_and_its_fingerprint_"
          "works_without_its_last_newline") {
  dlq_fixture f(1);
  f.add_failing_trigger("grp", "23514", 1000000);
  for (int i = 0; i < 2; ++i)
    f.place("grp");
  f.settle();
  REQUIRE(f.count("SELECT count(*) FROM dlq_events WHERE status = "
                  "'parked'") == 4);
  auto db_only =
    test::eventforge_binary() + " dlq --database.url='" + f.db.dsn() + "'";
  auto [lc, list] = test::run_command(db_only + " list");
  INFO(list);
  REQUIRE(lc == 0);
  // One line for the group: "group <12 hex>: 4 parked, oldest N s: ...".
  auto at = list.find("group ");
  REQUIRE(at != std::string::npos);
  auto id = list.substr(at + 6, 12);
  auto line = list.substr(at, list.find('\n', at) - at);
  CHECK_THAT(line, Catch::Contains(": 4 parked"));
  CHECK(list.find("group ", at + 1) == std::string::npos);
  // The whole entries, as JSON.
  auto [jc, json] = test::run_command(db_only + " list --json");
  auto doc = nlohmann::json::parse(json, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["groups"].size() == 1);
  CHECK(doc["groups"][0]["id"] == id);
  CHECK(doc["entries"].size() == 4);
  // A dry run by id, and by the fingerprint as `$(...)` hands it over.
  auto [ic, by_id] =
    test::run_command(db_only + " replay --dry-run --group " + id);
  INFO(by_id);
  CHECK(ic == 0);
  CHECK(by_id.find("would replay") != std::string::npos);
  auto [fc, by_print] = test::run_command(
    db_only +
    " replay --dry-run --group \"$(psql -Atc 'SELECT DISTINCT "
    "fingerprint FROM dlq_events' '" +
    f.db.dsn() + "')\"");
  INFO(by_print);
  CHECK(fc == 0);
  CHECK(by_print == by_id);
  CHECK(f.count("SELECT count(*) FROM dlq_actions") == 0);
}
