// The verifier must be able to fail: corrupt durable state on purpose and
// see each invariant violation reported with the IDs involved.

#include "kafka/event_record.hpp"
#include "kafka/offsets.hpp"
#include "kafka/outbox_producer.hpp"
#include "messages/ids.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/actors/applied.hpp>
#include <eventforge/embedded/verifier.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace ef;

namespace {

bool reports(const app::verification& v, const std::string& invariant,
             const std::string& id) {
  for (auto& x : v.violations)
    if (x.invariant == invariant && (x.order_id == id || x.event_id == id))
      return true;
  return false;
}

} // namespace

TEST_CASE("verifier_reports_duplicate_effects_missing_outbox_rows_and_"
          "offsets_past_unapplied_records") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  auto brokers = broker.bootstrap_servers();
  {
    test::tree t(cfg, {db.dsn(), brokers});
    for (int i = 0; i < 10; ++i)
      REQUIRE(
        test::post_json(t.url(), "/orders", test::order_body("c", 1, 100 + i))
          .first == 201);
    REQUIRE(
      test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));
  }
  auto clean = app::verify(cfg, db.dsn(), brokers);
  INFO(app::to_text(clean));
  REQUIRE(clean.ok());
  auto event = db.scalar<std::string>(
    "SELECT event_id::text FROM outbox ORDER BY seq LIMIT 1");
  auto order = db.scalar<std::string>(
    "SELECT order_id::text FROM outbox ORDER BY seq LIMIT 1");

  // I3: a second business effect, as a broken idempotency guard would write.
  db.exec("INSERT INTO business_effects (consumer, event_id, order_id, kind) "
          "SELECT consumer, event_id, order_id, kind FROM business_effects "
          "WHERE consumer = 'billing' AND event_id = '" +
          event + "'");
  auto dup = app::verify(cfg, db.dsn(), brokers);
  CHECK(reports(dup, "I3", event));
  db.exec("DELETE FROM business_effects WHERE id = (SELECT max(id) FROM "
          "business_effects)");

  // I1: an order whose outbox row is gone (the write was not atomic).
  db.exec("CREATE TABLE outbox_saved AS SELECT * FROM outbox WHERE order_id "
          "= '" +
          order + "'; DELETE FROM outbox WHERE order_id = '" + order + "'");
  auto missing = app::verify(cfg, db.dsn(), brokers);
  CHECK(reports(missing, "I1", order));
  db.exec("INSERT INTO outbox SELECT * FROM outbox_saved");
  REQUIRE(app::verify(cfg, db.dsn(), brokers).ok());

  // I5: a record nobody applied, with billing's offset committed past it.
  order_event ev{
    new_uuid_v7(), order_created_type, order, "2026-12-02T00:00:00Z", "{}", ""};
  kafka::outbox_producer producer(brokers, cfg.kafka.topic, 10000, "test");
  REQUIRE(producer.publish({ev}, {})[0].persisted);
  auto recs = kafka::read_all(brokers, cfg.kafka.topic, cfg.kafka.partitions);
  auto last = *std::find_if(recs.begin(), recs.end(),
                            [&](auto& r) { return r.event_id == ev.event_id; });
  // Like an operator's offset reset: possible once the group is empty,
  // which the broker decides when the stopped members' leave is processed.
  REQUIRE(test::wait_until([&] {
    try {
      kafka::commit_offsets(brokers, "eventforge.billing", cfg.kafka.topic,
                            {{last.partition, last.offset + 1}});
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }));
  auto ahead = app::verify(cfg, db.dsn(), brokers);
  INFO(app::to_text(ahead));
  CHECK(reports(ahead, "I5", ev.event_id));
  bool only_billing = true;
  for (auto& x : ahead.violations)
    if (x.invariant == "I5")
      only_billing = only_billing && x.consumer == "billing";
  CHECK(only_billing);
  // Fulfillment never committed past it: that is lag, reported as such.
  bool fulfillment_lags = false;
  for (auto& x : ahead.violations)
    fulfillment_lags = fulfillment_lags ||
                       (x.invariant == "drain" && x.consumer == "fulfillment");
  CHECK(fulfillment_lags);
  CHECK_FALSE(ahead.ok());
}

TEST_CASE("verify_under_load_says_it_read_a_moving_target_and_after_await_"
          "applied_reads_one_state") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  auto brokers = broker.bootstrap_servers();
  test::tree t(cfg, {db.dsn(), brokers});
  // Orders keep coming while verify reads.
  std::atomic<bool> placing{true};
  std::atomic<int> placed{0};
  std::thread client([&] {
    while (placing)
      if (test::post_json(t.url(), "/orders", test::order_body("m", 1, 100))
            .first == 201)
        ++placed;
  });
  REQUIRE(test::wait_until([&] { return placed > 5; }));
  app::verification during;
  for (int i = 0; i < 5 && during.moving.empty(); ++i)
    during = app::verify(cfg, db.dsn(), brokers);
  placing = false;
  client.join();
  INFO(app::to_text(during));
  CHECK_FALSE(during.moving.empty());
  CHECK_FALSE(during.ok());
  CHECK(app::to_text(during).find("read a moving target") != std::string::npos);
  // Settled: one state, every invariant holds.
  REQUIRE(ef::await_applied(cfg, {db.dsn(), brokers}, std::chrono::seconds(60))
            .applied);
  auto after = app::verify(cfg, db.dsn(), brokers);
  INFO(app::to_text(after));
  CHECK(after.moving.empty());
  CHECK(after.ok());
  CHECK(after.counts.orders == placed);
}
