// The recovery page on several nodes (issue 42): two `eventforge serve`
// processes share one PostgreSQL and one broker. A scenario posted to one
// node is armed through the database, so the node that owns the order's
// partition fires its crash; a node that cannot arm it makes the run
// refused, with the reason, before anything is placed.

#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

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
