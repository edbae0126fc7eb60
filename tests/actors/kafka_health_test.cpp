// The Kafka health sampler, deterministically: the clients' views, the
// counters and the broker probe are fakes the test sets before each round;
// the test coordinator runs one round at a time. What it pins down: the
// series per role and broker (combined over the clients of a role), a
// broker that refuses connections counted down whoever needs it, counter
// increments added once, and a series nobody reports any more removed,
// never frozen.

#include "actors/kafka_health.hpp"
#include "messages/tree_messages.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/round_actor.hpp"
#include <eventforge/messages/atoms.hpp>

#include <catch2/catch.hpp>

using namespace ef;
using namespace std::chrono_literals;

namespace {

struct world {
  std::vector<kafka::client_view> clients;
  kafka::health_counts counts;
  std::map<std::int32_t, bool> reachable;
};

kafka::client_view relay(const std::string& broker2_state,
                         std::int64_t undelivered) {
  kafka::client_view v;
  v.role = "eventforge-relay";
  v.type = "producer";
  v.undelivered = undelivered;
  v.brokers = {{1, "h:1", "UP", 0.002, 1, 0, 0},
               {2, "h:2", broker2_state, 0.004, 2, 0, 0}};
  return v;
}

struct health_fixture : test::actor_fixture {
  std::shared_ptr<world> w = std::make_shared<world>();
  context_ptr ctx = [] {
    config::settings cfg;
    cfg.metrics.sample_interval_ms = 1000;
    return make_context(cfg);
  }();
  caf::actor sampler;

  void start() {
    kafka_health_deps deps;
    auto ww = w;
    deps.clients = [ww](std::chrono::milliseconds) { return ww->clients; };
    deps.take = [ww] { return std::exchange(ww->counts, {}); };
    deps.probe = [ww] { return ww->reachable; };
    sampler = sys().spawn(kafka_health_with, ctx, std::move(deps));
    sched().run();
  }
  ~health_fixture() { caf::anon_send_exit(sampler, caf::exit_reason::kill); }

  /// The next round's timeout fires, and the round runs.
  void next_round() {
    REQUIRE(sched().trigger_timeout());
    sched().run();
  }

  std::optional<double> series(const std::string& key) {
    auto text = ctx->metrics->render_prometheus();
    auto at = text.find("\n" + key + " ");
    if (at == std::string::npos)
      return std::nullopt;
    return std::stod(text.substr(at + key.size() + 2));
  }
};

} // namespace

TEST_CASE_METHOD(health_fixture,
                 "clients_of_a_role_are_combined_per_broker_and_a_broker_that_"
                 "refuses_connections_is_down_whoever_needs_it") {
  // Two relays: one connected to broker 2, one reconnecting.
  w->clients = {relay("UP", 3), relay("CONNECT", 4)};
  w->reachable = {{1, true}, {2, true}};
  start();
  CHECK(series(R"(kafka_broker_up{broker="2",client="eventforge-relay"})") ==
        1.0);
  CHECK(series(
          R"(kafka_producer_undelivered_records{client="eventforge-relay"})") ==
        7.0);
  CHECK(
    series(
      R"(kafka_broker_rtt_seconds{broker="2",client="eventforge-relay"})") ==
    Approx(0.004));
  CHECK(series("kafka_brokers_down") == 0.0);
  // Broker 2 goes: the clients stop needing it (INIT) and it refuses
  // connections.
  w->clients = {relay("INIT", 0), relay("INIT", 0)};
  w->reachable = {{1, true}, {2, false}};
  next_round();
  INFO("an idle connection says nothing: the series is removed, not frozen");
  CHECK_FALSE(
    series(R"(kafka_broker_up{broker="2",client="eventforge-relay"})"));
  CHECK(series(R"(kafka_broker_reachable{broker="2"})") == 0.0);
  CHECK(series("kafka_brokers_down") == 1.0);
}

TEST_CASE_METHOD(health_fixture,
                 "counter_increments_are_added_once_and_a_client_that_stops_"
                 "reporting_drops_out") {
  w->clients = {relay("UP", 1)};
  w->counts.errors[{"eventforge-relay", 2}] = 5;
  w->counts.leader_changes["orders"] = 2;
  w->counts.client_errors[{"eventforge-relay", "_ALL_BROKERS_DOWN"}] = 1;
  start();
  auto errors =
    R"(kafka_broker_request_errors_total{broker="2",client="eventforge-relay"})";
  CHECK(series(errors) == 5.0);
  CHECK(series(R"(kafka_partition_leader_changes_total{topic="orders"})") ==
        2.0);
  CHECK(
    series(
      R"(kafka_client_errors_total{client="eventforge-relay",error="_ALL_BROKERS_DOWN"})") ==
    1.0);
  w->clients.clear(); // the relay's producer is gone
  next_round();
  CHECK(series(errors) == 5.0); // counted once
  CHECK_FALSE(
    series(R"(kafka_producer_undelivered_records{client="eventforge-relay"})"));
  CHECK(test::next_timeout_in(sched()) == 1000ms);
}
