// What librdkafka's statistics become (kafka/client_health.hpp): a client
// per role with its brokers, queues and group; counters from cumulative
// figures; leader changes counted once per process; which brokers are down.

#include "kafka/client_health.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace ef::kafka;

namespace {

/// librdkafka's statistics of one client, as much of them as is read.
std::string stats(const std::string& name, const std::string& type,
                  const std::string& broker2_state, int errors, int leader_of_1,
                  int rebalances = 0) {
  nlohmann::json j{
    {"name", name},
    {"client_id", name.substr(0, name.find('#'))},
    {"type", type},
    {"msg_cnt", 7},
    {"brokers",
     {{"127.0.0.1:9001/1",
       {{"name", "127.0.0.1:9001/1"},
        {"nodeid", 1},
        {"source", "learned"},
        {"state", "UP"},
        {"outbuf_cnt", 1},
        {"waitresp_cnt", 2},
        {"txerrs", errors},
        {"rxerrs", 0},
        {"req_timeouts", 0},
        {"txretries", 3},
        {"rtt", {{"avg", 1500}}},
        {"int_latency", {{"p99", 250000}}}}},
      {"127.0.0.1:9002/2",
       {{"name", "127.0.0.1:9002/2"},
        {"nodeid", 2},
        {"source", "learned"},
        {"state", broker2_state}}},
      {":0/internal",
       {{"nodeid", -1}, {"source", "internal"}, {"state", "UP"}}},
      {"GroupCoordinator",
       {{"nodeid", -1}, {"source", "logical"}, {"state", "UP"}}}}},
    {"topics",
     {{"orders",
       {{"partitions",
         {{"0", {{"partition", 0}, {"leader", 2}, {"consumer_lag", 4}}},
          {"1",
           {{"partition", 1}, {"leader", leader_of_1}, {"consumer_lag", -1}}},
          {"-1", {{"partition", -1}, {"leader", -1}}}}}}}}}};
  if (type == "consumer")
    j["cgrp"] = {
      {"state", "up"}, {"rebalance_cnt", rebalances}, {"assignment_size", 2}};
  return j.dump();
}

} // namespace

TEST_CASE("a_client_role_is_its_client_id_without_a_trailing_number") {
  CHECK(client_health::role_of("eventforge-relay-3#producer-7") ==
        "eventforge-relay");
  CHECK(client_health::role_of("eventforge.billing#consumer-2") ==
        "eventforge.billing");
  CHECK(client_health::role_of("eventforge-dlq-billing") ==
        "eventforge-dlq-billing");
  CHECK(client_health::role_of("eventforge-relay-") == "eventforge-relay-");
}

TEST_CASE("statistics_become_a_client_view_and_counters_grow_by_what_grew") {
  client_health h;
  h.update(stats("eventforge-relay-0#producer-1", "producer", "UP", 2, 1));
  auto v = h.clients(std::chrono::seconds(10));
  REQUIRE(v.size() == 1);
  CHECK(v[0].role == "eventforge-relay");
  CHECK(v[0].undelivered == 7);
  CHECK(v[0].queue_latency_seconds == Approx(0.25));
  REQUIRE(v[0].brokers.size() == 2); // not the internal thread
  CHECK(v[0].brokers[0].id == 1);
  CHECK(v[0].brokers[0].address == "127.0.0.1:9001");
  CHECK(v[0].brokers[0].outstanding == 3);
  CHECK(v[0].brokers[0].rtt_seconds == Approx(0.0015));
  // The first statistics set the baseline: nothing counted yet.
  CHECK(h.take().errors.empty());
  h.update(stats("eventforge-relay-0#producer-1", "producer", "UP", 5, 1));
  auto counts = h.take();
  CHECK(counts.errors[{"eventforge-relay", 1}] == 3);
  CHECK(h.take().errors.empty());
}

TEST_CASE("a_leader_change_is_counted_once_whichever_clients_see_it") {
  client_health h;
  h.update(stats("a-0#producer-1", "producer", "UP", 0, 1));
  h.update(stats("b-0#producer-2", "producer", "UP", 0, 1));
  CHECK(h.take().leader_changes.empty());
  h.update(stats("a-0#producer-1", "producer", "UP", 0, 3));
  h.update(stats("b-0#producer-2", "producer", "UP", 0, 3));
  CHECK(h.take().leader_changes["orders"] == 1);
}

TEST_CASE("a_group_members_view_has_its_state_coordinator_and_known_lags") {
  client_health h;
  h.update(stats("eventforge.billing#consumer-1", "consumer", "UP", 0, 1, 2));
  h.update(stats("eventforge.billing#consumer-1", "consumer", "UP", 0, 1, 5));
  auto v = h.clients(std::chrono::seconds(10));
  REQUIRE(v.size() == 1);
  CHECK(v[0].in_group);
  CHECK(v[0].group_state == "up");
  CHECK(v[0].coordinator_up);
  CHECK(v[0].assigned == 2);
  CHECK(v[0].lag == std::map<std::int32_t, std::int64_t>{{0, 4}});
  CHECK(h.take().rebalances["eventforge.billing"] == 3);
}

TEST_CASE("a_broker_is_down_when_it_refuses_connections_or_clients_cannot_"
          "reach_it_and_none_is_connected") {
  client_health h;
  h.update(stats("a-0#producer-1", "producer", "INIT", 0, 1));
  auto idle = h.clients(std::chrono::seconds(10));
  // Broker 2 idle for every client, and accepting connections: up.
  CHECK(brokers_down(idle, {{1, true}, {2, true}}).empty());
  // Refusing them: down, even though no client needs it.
  CHECK(brokers_down(idle, {{1, true}, {2, false}}) ==
        std::set<std::int32_t>{2});
  // A client that keeps trying and nobody connected: down, untried.
  h.update(stats("b-0#producer-2", "producer", "CONNECT", 0, 1));
  CHECK(brokers_down(h.clients(std::chrono::seconds(10)), {}) ==
        std::set<std::int32_t>{2});
  // Someone connected to it: not down.
  h.update(stats("c-0#producer-3", "producer", "UP", 0, 1));
  CHECK(brokers_down(h.clients(std::chrono::seconds(10)), {}).empty());
}

TEST_CASE("tcp_reachable_says_whether_something_listens") {
  // Nothing listens on port 1 of the loopback; a malformed address is not
  // reachable either.
  CHECK_FALSE(tcp_reachable("127.0.0.1:1", std::chrono::milliseconds(500)));
  CHECK_FALSE(tcp_reachable("no-port", std::chrono::milliseconds(500)));
}
