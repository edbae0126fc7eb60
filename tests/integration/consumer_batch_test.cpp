// Batched consumers: consecutive records of a partition share one
// transaction, each behind its own idempotency mark; any failure falls back
// to one record per transaction, so a poison record is still isolated.

#include "applier/event_applier.hpp"
#include "kafka/embedded_broker.hpp"
#include "kafka/offsets.hpp"
#include "messages/ids.hpp"
#include "persistence/migrations.hpp"
#include "persistence/order_store.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/config/options.hpp>
#include <eventforge/messages/events.hpp>

#include <catch2/catch.hpp>

using namespace ef;

namespace {

order_event event_of(test::database& db, const std::string& event_id) {
  auto row = db.scalar<std::string>(
    "SELECT event_type || ' ' || order_id FROM outbox WHERE event_id = '" +
    event_id + "'");
  auto space = row.find(' ');
  return {event_id,
          row.substr(0, space),
          row.substr(space + 1),
          "2026-01-01T00:00:00Z",
          "{}",
          ""};
}

} // namespace

TEST_CASE("a_batch_applies_each_event_behind_its_own_mark_in_order_and_"
          "stops_before_a_missing_order") {
  test::database db;
  persistence::migrate(db.dsn());
  persistence::order_store orders(db.dsn(), 1);
  auto o1 = orders.create({"ann", {{"book", 1, 100}}, "", "", ""});
  auto o2 = orders.create({"bob", {{"book", 1, 200}}, "", "", ""});
  auto o2x = orders.cancel(o2.order_id, "");
  auto o3 = orders.create({"cat", {{"book", 1, 300}}, "", "", ""});
  auto o4 = orders.create({"dan", {{"book", 1, 400}}, "", "", ""});
  event_applier billing(db.dsn(), "billing");
  REQUIRE(billing.apply(event_of(db, o1.event_id)) == apply_outcome::applied);
  auto ghost = event_of(db, o4.event_id);
  ghost.event_id = new_uuid_v7();
  ghost.order_id = new_uuid_v7(); // an order this database never saw
  auto outcomes =
    billing.apply_batch({event_of(db, o1.event_id), event_of(db, o2.event_id),
                         event_of(db, o2x.event_id), event_of(db, o3.event_id),
                         ghost, event_of(db, o4.event_id)});
  using ao = apply_outcome;
  CHECK(outcomes ==
        std::vector<ao>{ao::duplicate, ao::applied, ao::applied, ao::applied});
  // Durable state: one mark and one effect per applied event, in order,
  // nothing for the ghost or for what came after it.
  CHECK(
    db.scalar<std::string>("SELECT string_agg(b.kind, ',' ORDER BY b.id) FROM "
                           "business_effects b") == "debit,debit,refund,debit");
  CHECK(db.scalar<int>("SELECT count(*) FROM processed_events") == 4);
  CHECK(db.scalar<int>("SELECT count(*) FROM processed_events WHERE "
                       "event_id IN ('" +
                       ghost.event_id + "', '" + o4.event_id + "')") == 0);
  CHECK(db.scalar<long>("SELECT sum(balance_cents) FROM accounts") == -400);
  // The three new marks were committed together.
  CHECK(db.scalar<int>("SELECT count(DISTINCT xmin::text) FROM "
                       "processed_events WHERE event_id <> '" +
                       o1.event_id + "'") == 1);
  // A batch of duplicates changes nothing.
  CHECK(billing.apply_batch(
          {event_of(db, o2.event_id), event_of(db, o3.event_id)}) ==
        std::vector<ao>{ao::duplicate, ao::duplicate});
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects") == 4);
}

TEST_CASE("a_backlog_is_applied_in_batches_and_a_poison_event_among_them_"
          "is_parked_alone") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.kafka.partitions = 2;
  cfg.consumer.max_attempts = 2;
  cfg.consumer.backoff_initial_ms = 10;
  cfg.consumer.backoff_max_ms = 50;
  persistence::migrate(db.dsn());
  // The backlog exists before any consumer runs, so records arrive together.
  persistence::order_store orders(db.dsn(), cfg.relay.shards);
  constexpr int n = 60;
  std::string poison;
  for (int i = 0; i < n; ++i) {
    auto r = orders.create(
      {"c" + std::to_string(i % 5), {{"book", 1, 100}}, "", "", ""});
    if (i == n / 2)
      poison = r.order_id;
  }
  // A rule billing cannot pass for one order: its batch rolls back.
  db.exec("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ "
          "BEGIN RAISE EXCEPTION 'billing refuses this order'; END $$; "
          "CREATE TRIGGER refuse BEFORE INSERT ON business_effects FOR EACH "
          "ROW WHEN (NEW.consumer = 'billing' AND NEW.order_id = '" +
          poison + "') EXECUTE FUNCTION refuse()");
  kafka::embedded_broker broker(
    1, {{cfg.kafka.topic, cfg.kafka.partitions},
        {config::dlq_topic_of(cfg), cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  auto ends = [&] {
    return kafka::log_end_offsets(broker.bootstrap_servers(), cfg.kafka.topic,
                                  cfg.kafka.partitions);
  };
  REQUIRE(test::wait_until([&] {
    return db.scalar<int>("SELECT count(*) FROM dlq_events") == 1 &&
           db.scalar<int>("SELECT count(*) FROM processed_events") ==
             2 * n - 1 &&
           kafka::committed_offsets(broker.bootstrap_servers(),
                                    "eventforge.billing", cfg.kafka.topic,
                                    cfg.kafka.partitions) == ends() &&
           kafka::committed_offsets(broker.bootstrap_servers(),
                                    "eventforge.fulfillment", cfg.kafka.topic,
                                    cfg.kafka.partitions) == ends();
  }));
  // Only the poison is parked, and only for billing; every other event has
  // exactly one mark and one effect per consumer.
  CHECK(db.scalar<std::string>("SELECT consumer || ' ' || order_key FROM "
                               "dlq_events") == "billing " + poison);
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects") == 2 * n - 1);
  CHECK(db.scalar<int>("SELECT count(*) FROM (SELECT consumer, event_id FROM "
                       "business_effects GROUP BY 1, 2 HAVING count(*) > 1) "
                       "d") == 0);
  CHECK(db.scalar<long>("SELECT sum(balance_cents) FROM accounts") ==
        -100 * (n - 1));
  // Batches happened: fewer transactions than marks.
  CHECK(db.scalar<int>("SELECT count(DISTINCT xmin::text) FROM "
                       "processed_events WHERE consumer = 'fulfillment'") < n);
}
