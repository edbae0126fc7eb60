// A consumer EventForge does not ship: registered by the host, with its own
// table (its own migration), handling one event type, run beside the
// built-in consumers through crashes and redeliveries.

#include "tests/support/harness.hpp"
#include <eventforge/consumers/consumer_registry.hpp>
#include <eventforge/embedded/verifier.hpp>

#include <catch2/catch.hpp>

#include <map>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// One point per whole 100 cents of an order, on OrderCreated only.
class points_transaction : public consumer_transaction {
public:
  explicit points_transaction(pqxx::transaction_base& tx) : tx_(tx) {}

  // From the lines EventForge hands over, not from its tables.
  effect apply(const order_event&, order_state& o) override {
    std::int64_t cents = 0, units = 0;
    for (auto& line : o.lines) {
      cents += line.qty * line.price_cents;
      units += line.qty;
    }
    auto points = cents / 100;
    earned_[o.customer_id] += points;
    return {"points", points, units};
  }

  void finish() override {
    for (auto& [customer, points] : earned_)
      tx_.exec_prepared("points.earn", customer, points);
  }

private:
  pqxx::transaction_base& tx_;
  std::map<std::string, std::int64_t> earned_;
};

class points_consumer : public consumer {
public:
  std::string name() const override { return "points"; }
  std::vector<std::string> event_types() const override {
    return {order_created_type};
  }
  std::vector<std::string> migrations() const override {
    return {"CREATE TABLE test_points (customer_id text PRIMARY KEY, "
            "points bigint NOT NULL)"};
  }
  void prepare(statements& s) const override {
    s.prepare("earn", // "points.earn"
              "INSERT INTO test_points VALUES ($1, $2) ON CONFLICT "
              "(customer_id) DO UPDATE SET points = test_points.points + $2");
  }
  std::unique_ptr<consumer_transaction>
  begin(pqxx::transaction_base& tx) const override {
    return std::make_unique<points_transaction>(tx);
  }
};

std::shared_ptr<const consumer_registry> with_points() {
  auto r = consumer_registry::with_builtins();
  r.add(std::make_shared<points_consumer>());
  return std::make_shared<const consumer_registry>(std::move(r));
}

} // namespace

TEST_CASE("a_host_consumer_with_its_own_table_applies_each_event_once_"
          "through_crashes") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.consumer.enabled = {"fulfillment", "billing", "points"};
  // Crashes inside the consumers' transactions and between their commit
  // and the offset commit: every redelivery must be suppressed.
  cfg.chaos.points = {"consumer.before_db_commit",
                      "consumer.after_db_before_offset"};
  cfg.chaos.rate = 0.2;
  cfg.chaos.seed = 11;
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  endpoints ep{db.dsn(), broker.bootstrap_servers()};
  test::tree t(cfg, ep, with_points());

  constexpr int orders = 60;
  std::vector<std::string> ids;
  for (int i = 0; i < orders; ++i) {
    auto [status, body] = test::post_json(
      t.url(), "/orders",
      test::order_body("c" + std::to_string(i % 4), 1 + i % 3, 150 + i));
    REQUIRE(status == 201);
    ids.push_back(test::json_field(body, "order_id"));
  }
  for (int i = 0; i < orders; i += 6) {
    auto [status, body] =
      test::post_json(t.url(), "/orders/" + ids[i] + "/cancel", "");
    REQUIRE(status == 202);
  }
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, ep.kafka_brokers); }, 120s));

  CHECK(db.scalar<int>("SELECT count(*) FROM consumer_migrations WHERE "
                       "consumer = 'points' AND version = 1") == 1);
  // One mark and one effect per event, for the host's consumer as for the
  // built-in ones; the cancels it does not handle are marked as ignored.
  CHECK(db.scalar<int>("SELECT count(*) FROM processed_events WHERE "
                       "consumer = 'points'") == orders + 10);
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects WHERE "
                       "consumer = 'points' AND kind = 'points'") == orders);
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects WHERE "
                       "consumer = 'points' AND kind = 'ignored'") == 10);
  // Its own table holds exactly one award per order, per customer.
  CHECK(db.scalar<int>(
          "SELECT count(*) FROM (SELECT customer_id, sum(total_cents / 100) "
          "AS points FROM orders GROUP BY customer_id) want FULL JOIN "
          "test_points got USING (customer_id) WHERE got.points IS DISTINCT "
          "FROM want.points") == 0);
  CHECK(db.scalar<int>("SELECT count(*) FROM test_points") == 4);
  // The units it counted from the lines it was given are the lines the API
  // wrote; so are the built-in fulfillment's.
  for (auto [consumer, kind] :
       {std::pair{"points", "points"}, std::pair{"fulfillment", "fulfilled"}}) {
    INFO(consumer);
    CHECK(db.scalar<int>(
            std::string("SELECT count(*) FROM (SELECT order_id, sum(qty) AS "
                        "units FROM order_items GROUP BY order_id) want JOIN "
                        "business_effects got USING (order_id) WHERE "
                        "got.consumer = '") +
            consumer + "' AND got.kind = '" + kind +
            "' AND got.quantity = want.units") == orders);
  }
  // Crashes happened, so redeliveries did.
  CHECK(db.scalar<int>("SELECT count(*) FROM recovery_journal WHERE kind = "
                       "'crash' AND consumer = 'points'") > 0);
  auto v = app::verify(cfg, ep.database_dsn, ep.kafka_brokers);
  INFO(app::to_text(v));
  CHECK(v.ok());
}

TEST_CASE("an_enabled_consumer_nobody_registered_stops_start_naming_it") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.consumer.enabled = {"fulfillment", "loyalty"};
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  caf::actor_system_config caf_cfg;
  ef::configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  try {
    ef::start(sys, cfg, {db.dsn(), broker.bootstrap_servers()});
    FAIL("started with an unregistered consumer");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) ==
          "consumer.enabled: no consumer \"loyalty\" is registered "
          "(registered: billing, fulfillment)");
  }
  // Nothing of the tree ran: no consumer's migration, no group.
  CHECK(db.scalar<int>("SELECT count(*) FROM pg_tables WHERE tablename = "
                       "'consumer_migrations'") == 0);
}

TEST_CASE("a_registered_consumer_that_is_not_enabled_stops_start_naming_it") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.consumer.enabled = {"fulfillment"}; // billing, a built-in, may be off
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  caf::actor_system_config caf_cfg;
  ef::configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  try {
    ef::start(sys, cfg, {db.dsn(), broker.bootstrap_servers()}, nullptr,
              nullptr, with_points());
    FAIL("started with a registered consumer that would never run");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) ==
          "consumer \"points\" is registered but not in consumer.enabled "
          "(fulfillment): it would never run; enable it or do not register "
          "it");
  }
  CHECK(db.scalar<int>("SELECT count(*) FROM pg_tables WHERE tablename = "
                       "'consumer_migrations'") == 0);
}
