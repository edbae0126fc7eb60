// The live recovery page in a real browser: `eventforge serve` as a process,
// Debian's Chromium driven by tests/browser/recovery_page.mjs (playwright-
// core), and every number the page shows compared with what this test reads
// itself from PostgreSQL and the broker.

#include "kafka/offsets.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

using namespace ef;
using json = nlohmann::json;

namespace {

const std::vector<std::string> consumers{"fulfillment", "billing"};

std::vector<std::string> serve_args(const std::string& dsn,
                                    const std::string& brokers, bool demo) {
  // A short delivery timeout: a replay left "replaying" by the DLQ replay
  // scenarios is finished by the DLQ handler one second after it.
  return test::serve_command(
    dsn, brokers,
    {"--demo.enabled=" + std::string(demo ? "true" : "false"),
     "--kafka.delivery-timeout-ms=3000"});
}

/// Where the screenshots are kept (docs/ takes its picture from there).
std::string screenshot_dir() {
  auto dir = std::string(EF_BINARY_DIR) + "/screenshots";
  std::filesystem::create_directories(dir);
  return dir;
}

/// The last lines of a file, for a failure message.
std::string tail_of(const std::string& path, std::size_t max_chars = 4000) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  return text.size() > max_chars ? text.substr(text.size() - max_chars) : text;
}

/// Fails the test at once, naming what is missing and how to get it, if
/// the browser driver cannot run (instead of failing later on its empty
/// output, after a serve and a chaos run).
void require_browser_driver() {
  auto browser_dir = std::string(EF_SOURCE_DIR) + "/tests/browser";
  if (test::run_command("command -v node").first != 0)
    FAIL("node is not installed: run bash scripts/setup.sh");
  auto chromium = std::getenv("EF_CHROMIUM");
  if (!std::filesystem::exists(chromium ? chromium : "/usr/bin/chromium"))
    FAIL("no Chromium at " << (chromium ? chromium : "/usr/bin/chromium")
                           << ": run bash scripts/setup.sh (Debian's "
                              "chromium) or set EF_CHROMIUM");
  if (!std::filesystem::exists(browser_dir + "/node_modules/playwright-core"))
    FAIL(browser_dir << "/node_modules/playwright-core is missing (a build "
                        "configured by hand?): run bash scripts/setup.sh, or "
                        "cd tests/browser && "
                        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci");
}

/// Runs the browser driver; returns its one JSON object (its log goes to
/// `log`). Fails the test if it exits non-zero.
json drive(const std::string& url, const std::string& mode,
           const std::string& log, const std::string& extra = "") {
  auto script = std::string(EF_SOURCE_DIR) + "/tests/browser/recovery_page.mjs";
  auto [code, out] = test::run_command(
    "(node " + script + " --url " + url + " --out " + screenshot_dir() +
    " --mode " + mode + " " + extra + " 2>" + log + ")");
  INFO("driver output: " << out);
  INFO("driver log (" << log << "): " << tail_of(log));
  json r = json::parse(out, nullptr, false);
  REQUIRE_FALSE(r.is_discarded());
  CHECK(r["console_errors"].empty());
  REQUIRE(code == 0);
  return r;
}

/// Deliveries of `consumer` as durable state records them, by this test's
/// own SQL: applied marks, suppressed duplicates and crashes that rolled a
/// delivery back (recovery journal), deliveries that ended parked (DLQ).
long deliveries(test::database& db, const std::string& consumer,
                const std::string& order_filter) {
  auto q = [&](const std::string& from_where) {
    return db.scalar<long>("SELECT count(*) " + from_where);
  };
  auto of_order = [&](const std::string& column) {
    return order_filter.empty()
             ? std::string{}
             : " AND " + column + " = '" + order_filter + "'";
  };
  return q("FROM processed_events p WHERE consumer = '" + consumer + "'" +
           (order_filter.empty()
              ? std::string{}
              : " AND event_id IN (SELECT event_id FROM outbox WHERE order_id "
                "= '" +
                  order_filter + "')")) +
         q("FROM recovery_journal WHERE kind = 'suppressed' AND consumer = '" +
           consumer + "'" + of_order("order_id::text")) +
         q("FROM recovery_journal WHERE kind = 'crash' AND consumer = '" +
           consumer +
           "' AND point IN ('consumer.before_db_commit', "
           "'dlq.after_dlq_ack_before_offset')" +
           of_order("order_id::text")) +
         q("FROM dlq_events WHERE consumer = '" + consumer + "'" +
           of_order("order_key"));
}

long effects(test::database& db, const std::string& consumer,
             const std::string& order_filter) {
  return db.scalar<long>(
    "SELECT count(*) FROM business_effects WHERE consumer = '" + consumer +
    "'" +
    (order_filter.empty() ? std::string{}
                          : " AND order_id = '" + order_filter + "'"));
}

} // namespace

TEST_CASE("every_scenario_run_from_the_page_shows_what_postgres_and_the_"
          "broker_recorded") {
  require_browser_driver();
  test::database db;
  test::temp_dir logs;
  auto cfg = test::test_settings();
  // On its own three-broker in-process cluster, which the page's Kafka
  // scenarios fail (a broker elsewhere offers only the others).
  auto args = serve_args(db.dsn(), "", true);
  args.erase(std::remove_if(args.begin(), args.end(),
                            [](const std::string& a) {
                              return a.rfind("--kafka.brokers=", 0) == 0;
                            }),
             args.end());
  args.push_back("--kafka.embedded-brokers=3");
  test::child_process serve(args, logs.path + "/serve.log");
  auto ready = serve.await_line("ready");
  auto url = test::ready_field(ready, "http");
  auto brokers = test::ready_field(ready, "kafka");
  REQUIRE_FALSE(url.empty());
  REQUIRE_FALSE(brokers.empty());

  httplib::Client http(url);
  auto catalog = json::parse(http.Get("/scenarios")->body);
  REQUIRE(catalog["allowed"] == true);
  std::set<std::string> offered;
  for (auto& s : catalog["scenarios"])
    offered.insert(s["name"].get<std::string>());
  CHECK(offered.count("kafka-leader-moves-before-ack") == 1);
  CHECK(offered.count("kafka-broker-down-5s") == 1);

  auto r = drive(url, "scenarios", logs.path + "/driver.log");
  REQUIRE(r["scenarios"].size() == catalog["scenarios"].size());
  for (auto& shown : r["scenarios"]) {
    auto name = shown["name"].get<std::string>();
    auto order = shown["order_id"].get<std::string>();
    INFO("scenario " << name << ", order " << order);
    json expect;
    std::string point;
    for (auto& s : catalog["scenarios"])
      if (s["name"] == name) {
        expect = s["expect"];
        point = s["point"];
      }
    REQUIRE_FALSE(expect.is_null());

    // The page's counters are durable state's.
    auto events = db.scalar<long>(
      "SELECT count(*) FROM outbox WHERE order_id = '" + order + "'");
    CHECK(shown["shown"]["logical_events"] == events);
    for (auto& c : consumers) {
      INFO("consumer " << c);
      CHECK(shown["shown"]["per_consumer"][c]["deliveries"] ==
            deliveries(db, c, order));
      CHECK(shown["shown"]["per_consumer"][c]["changes"] ==
            effects(db, c, order));
      // Exactly one business change, whatever the failure.
      CHECK(effects(db, c, order) == 1);
    }
    CHECK(events == expect["logical_events"]);
    // A crash hits the first consumer (or, in the relay's windows, both);
    // without one the page shows the consumer with the most deliveries: a
    // Kafka fault may redeliver to either (a group coming back from a
    // broker outage rereads what it had not committed), and the
    // idempotency guard suppresses the copy.
    auto focus_consumer = consumers.front();
    if (point.empty())
      for (auto& c : consumers)
        if (deliveries(db, c, order) > deliveries(db, focus_consumer, order))
          focus_consumer = c;
    auto focus = deliveries(db, focus_consumer, order);
    CHECK(shown["shown"]["deliveries"] == focus);
    if (name == "relay-after-publish-before-ack")
      CHECK((focus == 1 || focus == 2)); // did the first copy land? either
    else if (name.rfind("kafka-", 0) == 0)
      CHECK(focus >= expect["deliveries"].get<long>()); // copies suppressed
    else
      CHECK(focus == expect["deliveries"]);
    CHECK(shown["shown"]["business_changes"] == 1);

    // The crash and the supervisor's restart are recorded, in that order.
    if (!point.empty()) {
      CHECK(db.scalar<long>("SELECT count(*) FROM recovery_journal WHERE "
                            "kind = 'crash' AND point = '" +
                            point + "' AND order_id = '" + order + "'") == 1);
      // The restart line is written in the background (a supervisor never
      // waits for the database): wait for it.
      CHECK(test::wait_until([&] {
        return db.scalar<long>(
                 "SELECT count(*) FROM recovery_journal r, recovery_journal c "
                 "WHERE c.kind = 'crash' AND c.order_id = '" +
                 order +
                 "' AND r.kind = 'restart' AND r.point = c.point AND "
                 "r.at >= c.at") >= 1;
      }));
    }
    // The broker was down when the order came: its row waited in the
    // outbox until the brokers were back, then drained.
    if (name == "kafka-broker-down-5s")
      CHECK(db.scalar<double>("SELECT extract(epoch FROM sent_at - "
                              "created_at) FROM outbox WHERE order_id = '" +
                              order + "'") >= 4.0);
    // The leaders moved in the relay's window, before its acknowledgement.
    if (name == "kafka-leader-moves-before-ack")
      CHECK(tail_of(logs.path + "/serve.log", 1 << 20)
              .find("fault ok: leader of orders/") != std::string::npos);
    if (name == "api-after-commit-before-reply")
      CHECK(db.scalar<long>("SELECT count(*) FROM recovery_journal WHERE "
                            "kind = 'client_retry' AND order_id = '" +
                            order + "'") >= 1);
    if (name == "poison-event" || name == "dlq-after-ack-before-offset" ||
        name.rfind("dlq-replay-", 0) == 0)
      CHECK(db.scalar<long>("SELECT count(*) FROM dlq_events WHERE order_key "
                            "= '" +
                            order + "' AND status = 'replayed'") == 1);

    // Each group committed its offset past every copy it was handed.
    auto partition = db.scalar<int>(
      "SELECT kafka_partition FROM outbox WHERE order_id = '" + order + "'");
    for (auto& c : consumers) {
      auto committed = kafka::committed_offsets(
        brokers, "eventforge." + c, cfg.kafka.topic, cfg.kafka.partitions);
      auto highest = db.scalar<long>(
        "SELECT greatest((SELECT max(kafka_offset) FROM processed_events WHERE "
        "consumer = '" +
        c +
        "' AND event_id IN (SELECT event_id FROM outbox WHERE order_id = '" +
        order +
        "')), (SELECT coalesce(max(kafka_offset), -1) FROM "
        "recovery_journal WHERE consumer = '" +
        c + "' AND order_id = '" + order + "'))");
      CHECK(committed[partition] > highest);
    }
    // The page lit every step and panel of a delivered, applied order.
    CHECK(shown["panels"]["order"] == "created");
    CHECK(shown["panels"]["outbox"] == "sent");
    CHECK(shown["panels"]["effect"] == "1");
    CHECK(shown["panels"]["offset"] == "committed");
    CHECK(shown["steps_lit"].size() == 10);
  }
  // Step walked the last scenario's recorded hops one at a time.
  auto& walk = r["step_walk"]["texts"];
  CHECK(walk.size() >= 5);
  std::set<std::string> distinct(walk.begin(), walk.end());
  CHECK(distinct.size() == walk.size());
}

TEST_CASE("after_a_chaos_run_of_1000_orders_the_read_only_page_shows_durable_"
          "state_and_scenarios_change_nothing") {
  require_browser_driver();
  test::database db;
  test::temp_dir logs;
  auto cfg = test::test_settings();
  test::broker_process broker(logs.path + "/broker.log");
  auto brokers = broker.brokers();
  REQUIRE_FALSE(brokers.empty());
  // A chaos run against this database and broker: every crash point fires
  // on about 2 % of its visits; the command verifies every invariant.
  auto [code, out] = test::run_command(
    test::eventforge_binary() +
    " chaos --orders 1000 --concurrency 8 --seed 11 --rate 0.02 "
    "--kafka.session-timeout-ms=6000 --log.level=error --database.url='" +
    db.dsn() + "' --kafka.brokers=" + brokers);
  INFO(out);
  REQUIRE(code == 0);

  test::child_process serve(serve_args(db.dsn(), brokers, false),
                            logs.path + "/serve.log");
  auto url = test::ready_field(serve.await_line("ready"), "http");
  REQUIRE_FALSE(url.empty());
  REQUIRE(test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));

  // What durable state says, by this test's own queries.
  auto orders = db.scalar<long>("SELECT count(*) FROM orders");
  CHECK(orders >= 1000);
  auto r = drive(
    url, "overview", logs.path + "/overview.log",
    "--order " + db.scalar<std::string>("SELECT id::text FROM orders ORDER BY "
                                        "created_at LIMIT 1"));
  auto& ov = r["overview"];
  CHECK(ov["orders"] == orders);
  // The live stages of this serve, which has taken no order itself (the
  // chaos run before it did the work): every stage is there, at 0 per
  // second, not "no data".
  for (auto stage : {"api", "relay", "billing", "fulfillment"})
    CHECK(ov["stage_rates"][stage] == "0.0");
  CHECK(ov["logical_events"] == db.scalar<long>("SELECT count(*) FROM outbox"));
  CHECK(ov["outbox_unsent"] == 0);
  CHECK(ov["dlq_parked"] == db.scalar<long>("SELECT count(*) FROM dlq_events "
                                            "WHERE status = 'parked'"));
  CHECK(ov["restarts"] == db.scalar<long>("SELECT count(*) FROM "
                                          "recovery_journal WHERE kind = "
                                          "'restart'"));
  CHECK(db.scalar<long>("SELECT count(*) FROM recovery_journal WHERE kind = "
                        "'crash'") > 0);
  for (auto& c : consumers) {
    INFO("consumer " << c);
    auto& shown = ov["consumers"][c];
    CHECK(shown["deliveries"] == deliveries(db, c, ""));
    CHECK(shown["changes"] == effects(db, c, ""));
    CHECK(shown["duplicates"] ==
          db.scalar<long>("SELECT count(*) FROM recovery_journal WHERE kind "
                          "= 'suppressed' AND consumer = '" +
                          c + "'"));
    CHECK(shown["lag"] == 0);
    // One business change per applied event, none twice.
    CHECK(effects(db, c, "") == db.scalar<long>("SELECT count(*) FROM "
                                                "processed_events WHERE "
                                                "consumer = '" +
                                                c + "'"));
  }

  // Read-only: the page says so, and a scenario request changes nothing.
  auto ro = drive(url, "readonly", logs.path + "/readonly.log");
  CHECK(ro["run_disabled"] == true);
  CHECK_FALSE(ro["readonly_notice"].get<std::string>().empty());
  httplib::Client http(url);
  auto refused =
    http.Post("/scenarios/consumer-before-db-commit", "", "application/json");
  REQUIRE(refused);
  CHECK(refused->status == 403);
  CHECK(db.scalar<long>("SELECT count(*) FROM orders") == orders);
}
