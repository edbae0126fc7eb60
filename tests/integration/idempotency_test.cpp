// The idempotency guard: duplicates, concurrent deliveries and missing orders.

#include "applier/event_applier.hpp"
#include "kafka/offsets.hpp"
#include "kafka/outbox_producer.hpp"
#include "messages/ids.hpp"
#include "persistence/migrations.hpp"
#include "persistence/order_store.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace ef;
using namespace std::chrono_literals;

namespace {

int count(test::database& db, const std::string& table,
          const std::string& event_id) {
  return db.scalar<int>("SELECT count(*) FROM " + table +
                        " WHERE event_id = '" + event_id + "'");
}

} // namespace

TEST_CASE("event_produced_twice_onto_the_topic_gives_one_mark_and_one_"
          "effect_per_consumer") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  auto [s, b] =
    test::post_json(t.url(), "/orders", test::order_body("c", 2, 1500));
  REQUIRE(s == 201);
  auto event_id = test::json_field(b, "event_id");
  REQUIRE(test::wait_until([&] {
    return count(db, "processed_events", event_id) == 2 &&
           test::quiescent(db, cfg, broker.bootstrap_servers());
  }));
  // Put the very same record onto the topic again, as a relay crash between
  // ack and mark would.
  auto records = kafka::read_all(broker.bootstrap_servers(), cfg.kafka.topic,
                                 cfg.kafka.partitions);
  REQUIRE(records.size() == 1);
  kafka::outbox_producer producer(broker.bootstrap_servers(), cfg.kafka.topic,
                                  10000, "test");
  auto d = producer.publish_raw(records[0].key, records[0].value,
                                {{"event_id", records[0].event_id}});
  REQUIRE(d.persisted);
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  CHECK(kafka::read_all(broker.bootstrap_servers(), cfg.kafka.topic,
                        cfg.kafka.partitions)
          .size() == 2);
  CHECK(count(db, "processed_events", event_id) == 2);
  CHECK(count(db, "business_effects", event_id) == 2);
  CHECK(db.scalar<std::int64_t>("SELECT balance_cents FROM accounts WHERE "
                                "customer_id = 'c'") == -3000);
}

TEST_CASE("concurrent_deliveries_of_one_event_to_two_workers_give_one_mark_"
          "and_one_effect") {
  test::database db;
  persistence::migrate(db.dsn());
  persistence::order_store orders(db.dsn(), 4);
  constexpr int n = 200;
  std::vector<order_event> events;
  for (int i = 0; i < n; ++i) {
    create_order cmd{
      "customer-" + std::to_string(i % 7), {{"sku", 1, 250}}, "", "", ""};
    auto r = orders.create(cmd);
    events.push_back(
      {r.event_id, order_created_type, r.order_id, "", "{}", ""});
  }
  for (std::string consumer : {"fulfillment", "billing"}) {
    // Two workers, each with its own connection, race on every event.
    std::atomic<int> applied{0}, duplicates{0};
    std::atomic<int> ready{0};
    auto worker = [&] {
      event_applier applier(db.dsn(), consumer);
      ++ready;
      while (ready < 2)
        std::this_thread::yield();
      for (auto& ev : events) {
        auto outcome = applier.apply(ev);
        if (outcome == apply_outcome::applied)
          ++applied;
        else if (outcome == apply_outcome::duplicate)
          ++duplicates;
      }
    };
    std::thread a(worker), b(worker);
    a.join();
    b.join();
    INFO(consumer);
    CHECK(applied == n);
    CHECK(duplicates == n);
    CHECK(db.scalar<int>("SELECT count(*) FROM processed_events WHERE "
                         "consumer = '" +
                         consumer + "'") == n);
    CHECK(db.scalar<int>("SELECT count(*) FROM business_effects WHERE "
                         "consumer = '" +
                         consumer + "'") == n);
  }
  CHECK(-db.scalar<std::int64_t>("SELECT sum(balance_cents) FROM accounts") ==
        n * 250);
}

TEST_CASE("event_for_a_missing_order_is_rolled_back_without_a_mark_and_"
          "applied_once_the_order_exists") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.consumer.backoff_max_ms = 200;
  cfg.consumer.max_attempts = 1000; // keep retrying until the order exists
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  auto order_id = new_uuid_v7();
  auto event_id = new_uuid_v7();
  order_event ev{event_id,
                 order_created_type,
                 order_id,
                 "2026-12-02T00:00:00Z",
                 R"({"total_cents":700})",
                 ""};
  kafka::outbox_producer producer(broker.bootstrap_servers(), cfg.kafka.topic,
                                  10000, "test");
  REQUIRE(producer.publish({ev}, {})[0].persisted);
  // While the order is missing, every attempt rolls back: no mark, no
  // effect, and the offset stays before the record. Observed across three
  // failed attempts of each consumer, counted, not timed.
  auto retries = [&](const char* consumer) {
    return t.metrics().sum("consumer_retries_total", {{"consumer", consumer}});
  };
  REQUIRE(test::wait_until([&] {
    REQUIRE(count(db, "processed_events", event_id) == 0);
    REQUIRE(count(db, "business_effects", event_id) == 0);
    return retries("fulfillment") >= 3 && retries("billing") >= 3;
  }));
  REQUIRE_FALSE(test::quiescent(db, cfg, broker.bootstrap_servers()));
  db.exec(
    "INSERT INTO orders (id, customer_id, status, total_cents) VALUES ('" +
    order_id + "', 'late', 'created', 700)");
  REQUIRE(test::wait_until([&] {
    return count(db, "processed_events", event_id) == 2 &&
           test::quiescent(db, cfg, broker.bootstrap_servers());
  }));
  CHECK(count(db, "business_effects", event_id) == 2);
  CHECK(db.scalar<std::string>("SELECT status FROM orders WHERE id = '" +
                               order_id + "'") == "processed");
  CHECK(db.scalar<std::int64_t>("SELECT balance_cents FROM accounts WHERE "
                                "customer_id = 'late'") == -700);
}

TEST_CASE("cancel_seen_before_its_order_moves_no_money_and_the_late_create_"
          "is_skipped") {
  // The written rule for a cancel that reaches a consumer that never applied
  // the order's creation (it can only happen after a late replay).
  test::database db;
  persistence::migrate(db.dsn());
  persistence::order_store orders(db.dsn(), 4);
  auto created = orders.create({"late-c", {{"sku", 2, 500}}, "", "", ""});
  auto cancelled = orders.cancel(created.order_id, "");
  order_event create_ev{
    created.event_id, order_created_type, created.order_id, "", "{}", ""};
  order_event cancel_ev{
    cancelled.event_id, order_cancelled_type, created.order_id, "", "{}", ""};
  event_applier billing(db.dsn(), "billing");
  event_applier fulfillment(db.dsn(), "fulfillment");
  // The create sits in the DLQ of both consumers (parked, then replayed):
  // the only way a cancel gets ahead of its create.
  for (auto consumer : {"billing", "fulfillment"})
    db.exec("INSERT INTO dlq_events (consumer, event_id, order_key, value, "
            "error_class, error_message, fingerprint, attempts, source_topic, "
            "source_partition, source_offset, first_failure_at, "
            "last_failure_at, status) VALUES ('" +
            std::string(consumer) + "', '" + created.event_id + "', '" +
            created.order_id +
            "', '', 'db_permanent', 'x', 'x', 1, 'orders', 0, 0, now(), "
            "now(), 'replayed')");
  CHECK(billing.apply(cancel_ev) == apply_outcome::applied);
  CHECK(billing.apply(create_ev) == apply_outcome::applied);
  CHECK(fulfillment.apply(cancel_ev) == apply_outcome::applied);
  CHECK(fulfillment.apply(create_ev) == apply_outcome::applied);
  CHECK(db.scalar<std::string>(
          "SELECT string_agg(kind, ',' ORDER BY id) FROM business_effects "
          "WHERE consumer = 'billing'") == "refund_skipped,debit_skipped");
  CHECK(db.scalar<std::string>(
          "SELECT string_agg(kind, ',' ORDER BY id) FROM business_effects "
          "WHERE consumer = 'fulfillment'") == "cancelled,fulfill_skipped");
  CHECK(db.scalar<int>("SELECT count(*) FROM accounts WHERE balance_cents "
                       "<> 0") == 0);
  CHECK(db.scalar<std::string>("SELECT status FROM orders") == "cancelled");
}

TEST_CASE("cancel_whose_create_this_consumer_never_applied_is_deferred_and_"
          "both_are_queued_again_in_order") {
  // The broker lost the create (a trim, a new broker) but still delivers the
  // cancel: applying the cancel first would break per-order order (I4).
  test::database db;
  persistence::migrate(db.dsn());
  persistence::order_store orders(db.dsn(), 4);
  auto created = orders.create({"lost-c", {{"sku", 1, 900}}, "", "", ""});
  auto cancelled = orders.cancel(created.order_id, "");
  db.exec("UPDATE outbox SET sent_at = now(), epoch = 1, kafka_partition = 0, "
          "kafka_offset = seq");
  order_event create_ev{
    created.event_id, order_created_type, created.order_id, "", "{}", ""};
  order_event cancel_ev{
    cancelled.event_id, order_cancelled_type, created.order_id, "", "{}", ""};
  event_applier billing(db.dsn(), "billing");
  event_applier fulfillment(db.dsn(), "fulfillment");
  // Fulfillment had applied the create; billing had not.
  REQUIRE(fulfillment.apply(create_ev) == apply_outcome::applied);
  CHECK(billing.apply(cancel_ev) == apply_outcome::deferred);
  CHECK(db.scalar<int>("SELECT count(*) FROM processed_events WHERE consumer "
                       "= 'billing'") == 0);
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects WHERE consumer "
                       "= 'billing'") == 0);
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox WHERE sent_at IS NULL "
                       "AND republish_count = 1") == 2);
  // Fulfillment has nothing missing before the cancel: it applies it.
  CHECK(fulfillment.apply(cancel_ev) == apply_outcome::applied);
  // Republished in seq order, billing applies both, in order.
  CHECK(billing.apply(create_ev) == apply_outcome::applied);
  CHECK(billing.apply(cancel_ev) == apply_outcome::applied);
  CHECK(db.scalar<std::string>(
          "SELECT string_agg(kind, ',' ORDER BY id) FROM business_effects "
          "WHERE consumer = 'billing'") == "debit,refund");
  CHECK(db.scalar<std::int64_t>("SELECT balance_cents FROM accounts WHERE "
                                "customer_id = 'lost-c'") == 0);
}

TEST_CASE("undecodable_kafka_records_write_nothing_and_do_not_stall_the_"
          "partition") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.kafka.partitions = 1; // everything lands behind the poison records
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  kafka::outbox_producer producer(broker.bootstrap_servers(), cfg.kafka.topic,
                                  10000, "test");
  auto order_id = new_uuid_v7();
  for (auto value :
       {std::string("{not json"), std::string("[]"),
        std::string(R"({"event_id":"x","event_type":"OrderCreated"})"),
        R"({"event_id":")" + new_uuid_v7() +
          R"(","event_type":"OrderShipped","order_id":")" + order_id +
          R"(","occurred_at":"2026-12-02T00:00:00Z","payload":{}})"})
    REQUIRE(producer.publish_raw(order_id, value, {}).persisted);
  auto [s, b] = test::post_json(t.url(), "/orders",
                                test::order_body("after-poison", 1, 100));
  REQUIRE(s == 201);
  REQUIRE(test::wait_until([&] {
    return db.scalar<int>("SELECT count(*) FROM processed_events") == 2 &&
           test::quiescent(db, cfg, broker.bootstrap_servers());
  }));
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects") == 2);
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects WHERE order_id "
                       "= '" +
                       order_id + "'") == 0);
}

TEST_CASE("a_key_that_retention_deletes_between_its_claim_and_its_read_is_a_"
          "new_request_not_a_crash") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  // The claim of key "ghost" finds it taken once (a trigger skips the
  // insert, as ON CONFLICT does) while the read after it finds no key: what
  // the janitor deleting the key in between looks like to the API.
  db.exec("CREATE SEQUENCE ghost_claims; CREATE FUNCTION skip_ghost() "
          "RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.key = 'ghost' "
          "AND nextval('ghost_claims') = 1 THEN RETURN NULL; END IF; RETURN "
          "NEW; END $$; CREATE TRIGGER skip_ghost BEFORE INSERT ON "
          "idempotency_keys FOR EACH ROW EXECUTE FUNCTION skip_ghost()");
  auto [s, b] = test::post_json(t.url(), "/orders",
                                test::order_body("ghost", 1, 100), "ghost");
  INFO(b);
  CHECK(s == 201);
  CHECK(db.scalar<int>("SELECT count(*) FROM orders WHERE customer_id = "
                       "'ghost'") == 1);
  CHECK(db.scalar<int>("SELECT count(*) FROM idempotency_keys WHERE key = "
                       "'ghost'") == 1);
  // No API worker crashed on the way.
  CHECK(test::counters(
          t.system(),
          t.root())[R"(actor_restarts_total{kind="api",reason="exception"})"] ==
        0);
}
