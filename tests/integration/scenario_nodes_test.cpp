// The recovery page on several nodes (issue 42): two `eventforge serve`
// processes share one PostgreSQL and one broker. A scenario posted to one
// node is armed through the database, so the node that owns the order's
// partition fires its crash; a node that cannot arm it makes the run
// refused, with the reason, before anything is placed.

#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

using namespace ef;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

/// One partition and one relay shard: each is owned by exactly one node,
/// so the test knows which node must fire the crash.
std::vector<std::string> node_args(const std::string& dsn,
                                   const std::string& brokers,
                                   const std::string& name, bool demo) {
  return test::serve_command(
    dsn, brokers,
    {"--node.name=" + name,
     "--demo.enabled=" + std::string(demo ? "true" : "false"),
     "--kafka.partitions=1", "--relay.shards=1",
     "--kafka.statistics-interval-ms=300"});
}

/// This node's fulfillment members' assigned partitions (its /metrics), or
/// -1 if the series is not there yet.
int assigned_fulfillment(const std::string& url) {
  httplib::Client http(url);
  auto r = http.Get("/metrics");
  if (!r || r->status != 200)
    return -1;
  std::istringstream lines(r->body);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("kafka_consumer_group_assigned_partitions{", 0) == 0 &&
        line.find("fulfillment") != std::string::npos)
      return std::stoi(line.substr(line.rfind(' ') + 1));
  return -1;
}

json post_scenario(const std::string& url, const std::string& name,
                   int& status) {
  httplib::Client http(url);
  auto r = http.Post(("/scenarios/" + name).c_str(), "", "application/json");
  REQUIRE(r);
  status = r->status;
  return json::parse(r->body);
}

} // namespace

TEST_CASE("a_scenario_posted_to_the_node_that_does_not_own_the_partition_"
          "fires_on_the_node_that_does") {
  test::database db;
  test::temp_dir logs;
  test::broker_process broker(logs.path + "/broker.log",
                              {"--kafka.partitions=1"});
  auto brokers = broker.brokers();
  REQUIRE_FALSE(brokers.empty());
  test::child_process b(node_args(db.dsn(), brokers, "node-b", true),
                        logs.path + "/b.log");
  auto url_b = test::ready_field(b.await_line("ready"), "http");
  REQUIRE_FALSE(url_b.empty());
  test::child_process a(node_args(db.dsn(), brokers, "node-a", true),
                        logs.path + "/a.log");
  auto url_a = test::ready_field(a.await_line("ready"), "http");
  REQUIRE_FALSE(url_a.empty());

  // The one partition settles on one node's fulfillment member.
  std::string owner, other;
  REQUIRE(test::wait_until(
    [&] {
      auto in_a = assigned_fulfillment(url_a);
      auto in_b = assigned_fulfillment(url_b);
      if (in_a + in_b != 1 || in_a < 0 || in_b < 0)
        return false;
      owner = in_a == 1 ? url_a : url_b;
      other = in_a == 1 ? url_b : url_a;
      return true;
    },
    60s));
  auto owner_name = owner == url_a ? "node-a" : "node-b";
  auto other_name = owner == url_a ? "node-b" : "node-a";
  INFO("partition 0 of orders is node " << owner_name << "'s; posting to "
                                        << other_name);

  int status = 0;
  auto run = post_scenario(other, "consumer-after-db-before-offset", status);
  INFO("answer: " << run.dump());
  REQUIRE(status == 202);
  CHECK(run["node"] == other_name);
  CHECK(run["armed_on"].size() == 2);
  auto order = run["order_id"].get<std::string>();
  auto trace = run["trace_id"].get<std::string>();

  // Durable: the node owning the partition claimed and fired the crash,
  // once; the journal holds it; the event was applied once.
  REQUIRE(test::wait_until(
    [&] {
      return db.scalar<long>("SELECT count(*) FROM processed_events p JOIN "
                             "outbox o USING (event_id) WHERE o.order_id = '" +
                             order + "' AND p.consumer = 'fulfillment'") == 1 &&
             db.scalar<long>("SELECT count(*) FROM recovery_journal WHERE "
                             "kind = 'crash' AND order_id = '" +
                             order + "'") == 1;
    },
    60s));
  CHECK(
    db.scalar<std::string>(
      "SELECT coalesce(fired_by, '') FROM scenario_arms WHERE trace_id = '" +
      trace + "'") == owner_name);
  CHECK(db.scalar<std::string>("SELECT order_id::text FROM scenario_arms "
                               "WHERE trace_id = '" +
                               trace + "'") == order);
  CHECK(db.scalar<std::string>(
          "SELECT point FROM recovery_journal WHERE kind = 'crash' AND "
          "order_id = '" +
          order + "'") == "consumer.after_db_before_offset");
  REQUIRE(test::wait_until(
    [&] {
      return db.scalar<long>(
               "SELECT count(*) FROM recovery_journal WHERE kind = "
               "'suppressed' AND consumer = 'fulfillment' AND order_id = '" +
               order + "'") >= 1;
    },
    60s));
  CHECK(db.scalar<long>("SELECT count(*) FROM business_effects e JOIN outbox "
                        "o USING (event_id) WHERE o.order_id = '" +
                        order + "' AND e.consumer = 'fulfillment'") == 1);
  // The page of the node it was posted to says where it fired.
  httplib::Client http(other);
  auto t = http.Get(("/orders/" + order + "/trace").c_str());
  REQUIRE(t);
  REQUIRE(t->status == 200);
  auto traced = json::parse(t->body);
  INFO("trace scenario: " << traced["scenario"].dump());
  CHECK(traced["scenario"]["fired_by"] == owner_name);
  CHECK(traced["scenario"]["armed_by"] == other_name);
}

TEST_CASE("a_scenario_is_refused_naming_the_node_sharing_the_database_that_"
          "cannot_arm_it_and_nothing_is_placed") {
  test::database db;
  test::temp_dir logs;
  test::broker_process broker(logs.path + "/broker.log",
                              {"--kafka.partitions=1"});
  auto brokers = broker.brokers();
  REQUIRE_FALSE(brokers.empty());
  test::child_process a(node_args(db.dsn(), brokers, "node-a", true),
                        logs.path + "/a.log");
  auto url_a = test::ready_field(a.await_line("ready"), "http");
  REQUIRE_FALSE(url_a.empty());
  long orders = 0;
  {
    // Without demo mode or an admin token, node-b arms no scenario.
    test::child_process b(node_args(db.dsn(), brokers, "node-b", false),
                          logs.path + "/b.log");
    REQUIRE_FALSE(test::ready_field(b.await_line("ready"), "http").empty());
    orders = db.scalar<long>("SELECT count(*) FROM orders");
    int status = 0;
    auto refused = post_scenario(url_a, "relay-after-ack-before-mark", status);
    INFO("answer: " << refused.dump());
    CHECK(status == 409);
    auto why = refused["error"].get<std::string>();
    CHECK(why.find("node node-b") != std::string::npos);
    CHECK(why.find("demo.enabled") != std::string::npos);
    CHECK(why.find("nothing was run") != std::string::npos);
    CHECK(db.scalar<long>("SELECT count(*) FROM orders") == orders);
    CHECK(db.scalar<long>("SELECT count(*) FROM scenario_arms") == 0);
    b.signal(SIGTERM);
    CHECK(b.wait() == 0);
  }
  // node-b gone: the same scenario runs, on the one node left.
  int status = 0;
  auto run = post_scenario(url_a, "relay-after-ack-before-mark", status);
  INFO("answer: " << run.dump());
  REQUIRE(status == 202);
  auto trace = run["trace_id"].get<std::string>();
  REQUIRE(test::wait_until(
    [&] {
      return db.scalar<std::string>("SELECT coalesce(fired_by, '') FROM "
                                    "scenario_arms WHERE trace_id = '" +
                                    trace + "'") == "node-a";
    },
    60s));
  CHECK(db.scalar<long>("SELECT count(*) FROM orders") == orders + 1);
}

TEST_CASE("the_kafka_scenarios_write_what_happened_on_the_broker_to_the_"
          "order_journal_and_trace") {
  test::database db;
  test::temp_dir logs;
  // Its own three-broker in-process cluster: the Kafka scenarios need it.
  auto args =
    test::serve_command(db.dsn(), "",
                        {"--demo.enabled=true", "--kafka.embedded-brokers=3",
                         "--kafka.delivery-timeout-ms=30000"});
  args.erase(std::remove_if(args.begin(), args.end(),
                            [](const std::string& a) {
                              return a.rfind("--kafka.brokers=", 0) == 0;
                            }),
             args.end());
  test::child_process serve(args, logs.path + "/serve.log");
  auto url = test::ready_field(serve.await_line("ready"), "http");
  REQUIRE_FALSE(url.empty());

  auto run_scenario = [&](const std::string& name) {
    int status = 0;
    json run;
    // One run at a time: the previous one ends once its brokers are back.
    REQUIRE(test::wait_until(
      [&] {
        run = post_scenario(url, name, status);
        return status != 409;
      },
      60s));
    INFO("answer: " << run.dump());
    REQUIRE(status == 202);
    return run["order_id"].get<std::string>();
  };
  auto lines = [&](const std::string& order, const std::string& like) {
    return db.scalar<long>("SELECT count(*) FROM recovery_journal WHERE kind "
                           "= 'broker' AND actor = 'kafka' AND order_id = '" +
                           order + "' AND detail LIKE '" + like + "'");
  };

  auto down = run_scenario("kafka-broker-down-5s");
  REQUIRE(
    test::wait_until([&] { return lines(down, "broker % up%") == 3; }, 60s));
  CHECK(lines(down, "broker % down%") == 3);
  // Down from t to t + 5 s, as the journal's own times say.
  CHECK(db.scalar<double>(
          "SELECT extract(epoch FROM max(at) FILTER (WHERE detail LIKE "
          "'broker % up%') - min(at) FILTER (WHERE detail LIKE 'broker % "
          "down%')) FROM recovery_journal WHERE kind = 'broker' AND "
          "order_id = '" +
          down + "'") >= 4.9);

  auto moved = run_scenario("kafka-leader-moves-before-ack");
  REQUIRE(test::wait_until(
    [&] { return lines(moved, "leader of orders/% moved from broker %") >= 1; },
    60s));
  // The order's trace shows them as hops of its timeline.
  httplib::Client http(url);
  REQUIRE(test::wait_until(
    [&] {
      auto t = http.Get(("/orders/" + moved + "/trace").c_str());
      return t && t->status == 200 &&
             t->body.find("\"hop\":\"broker\"") != std::string::npos &&
             t->body.find("moved from broker") != std::string::npos;
    },
    30s));
}
