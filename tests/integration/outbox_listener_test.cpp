#include "kafka/embedded_broker.hpp"
#include "persistence/db_error.hpp"
#include "persistence/migrations.hpp"
#include "persistence/order_store.hpp"
#include "persistence/outbox_listener.hpp"
#include "persistence/outbox_store.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// Sessions whose last statement was a LISTEN: the ones every NOTIFY wakes.
long listening_sessions(test::database& db) {
  return db.scalar<long>("SELECT count(*) FROM pg_stat_activity WHERE query "
                         "LIKE 'LISTEN%' AND pid <> pg_backend_pid()");
}

} // namespace

TEST_CASE("relay_shards_share_one_listen_session_and_each_wakes_for_its_own_"
          "inserts_only") {
  test::database db;
  persistence::migrate(db.dsn());
  constexpr int shards = 4;
  persistence::listener_slot slot;
  std::vector<std::unique_ptr<persistence::outbox_store>> stores;
  for (int s = 0; s < shards; ++s)
    stores.push_back(std::make_unique<persistence::outbox_store>(
      db.dsn(), s, slot.get(db.dsn(), shards)));
  // Each NOTIFY makes every listening backend run a transaction: one per
  // process, not one per shard.
  CHECK(listening_sessions(db) == 1);
  for (auto& s : stores) // nothing pending yet
    CHECK_FALSE(s->await_notify(0));

  persistence::order_store orders(db.dsn(), shards);
  orders.create({"wake", {{"sku", 1, 100}}, "", "", ""});
  auto shard = db.scalar<int>("SELECT shard FROM outbox");
  CHECK(stores[static_cast<size_t>(shard)]->await_notify(5000));
  for (int s = 0; s < shards; ++s)
    if (s != shard)
      CHECK_FALSE(stores[static_cast<size_t>(s)]->await_notify(50));
  // Taken by that call: the next one waits for a new insert.
  CHECK_FALSE(stores[static_cast<size_t>(shard)]->await_notify(50));
}

TEST_CASE("a_broken_listen_session_fails_every_waiting_relay_and_the_next_"
          "one_gets_a_new_session") {
  test::database db;
  persistence::migrate(db.dsn());
  persistence::listener_slot slot;
  auto first = slot.get(db.dsn(), 2);
  persistence::outbox_store store(db.dsn(), 0, first);
  db.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
          "query LIKE 'LISTEN%' AND pid <> pg_backend_pid()");
  // Within one wait slice the listener sees its session gone; a relay that
  // waits on it crashes, as one whose own session broke.
  try {
    store.await_notify(5000);
    FAIL("await_notify returned on a broken listen session");
  } catch (const persistence::db_error& e) {
    CHECK(e.code() == persistence::db_errc::unavailable);
  }
  CHECK_FALSE(first->healthy());
  // The restarted relay gets a working listener.
  auto second = slot.get(db.dsn(), 2);
  CHECK(second != first);
  CHECK(second->healthy());
  persistence::outbox_store restarted(db.dsn(), 0, second);
  persistence::order_store orders(db.dsn(), 1);
  orders.create({"again", {{"sku", 1, 100}}, "", "", ""});
  CHECK(restarted.await_notify(5000));
}

TEST_CASE("idle_partitions_park_and_only_a_relay_announcement_brings_the_next_"
          "order_to_both_consumers") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.consumer.enabled = {"fulfillment", "billing"};
  cfg.kafka.park_idle_ms = 200;
  // No recheck within the test: a parked partition moves only when a relay
  // announces a record there.
  cfg.kafka.park_recheck_ms = 3'600'000;
  kafka::embedded_broker broker{
    1,
    {{"orders", cfg.kafka.partitions}, {"orders.dlq", cfg.kafka.partitions}}};
  auto brokers = broker.bootstrap_servers();
  test::tree t(cfg, {db.dsn(), brokers});
  auto everything_parked = [&] {
    double n = 0;
    for (auto& [series, v] :
         t.metrics().positive_gauges("consumer_partitions_parked"))
      n += v;
    return n == 2 * cfg.kafka.partitions;
  };
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    REQUIRE(test::wait_until(everything_parked));
    REQUIRE(test::post_json(t.url(), "/orders",
                            test::order_body("parked", 1, 100 + round))
              .first == 201);
    REQUIRE(
      test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));
  }
  CHECK(db.scalar<long>("SELECT count(*) FROM business_effects") == 6);
  CHECK(db.scalar<long>("SELECT count(*) FROM processed_events") == 6);
}

namespace {

/// Every announced (partition, offset), as the listener hands them out.
struct heard_positions : persistence::published_sink {
  std::mutex mtx;
  std::map<std::int32_t, std::int64_t> heard;
  void published(std::int32_t p, std::int64_t o) override {
    std::lock_guard<std::mutex> guard{mtx};
    heard[p] = o;
  }
  size_t size() {
    std::lock_guard<std::mutex> guard{mtx};
    return heard.size();
  }
};

} // namespace

TEST_CASE("a_mark_that_announces_three_thousand_partitions_commits_and_every_"
          "partition_is_heard") {
  // One NOTIFY payload for 3,000 partitions would be about 30 kB, past
  // PostgreSQL's 8,000 bytes: the mark would fail after the broker acked
  // its rows, and the relay would publish them again for ever.
  std::map<std::int32_t, std::int64_t> highest;
  for (std::int32_t p = 0; p < 3000; ++p)
    highest[p] = 1000000 + p;
  auto payloads = persistence::announcement_payloads(highest);
  CHECK(payloads.size() > 1);
  size_t items = 0;
  for (auto& payload : payloads) {
    CHECK(payload.size() <= 7900);
    items +=
      static_cast<size_t>(std::count(payload.begin(), payload.end(), ',')) + 1;
  }
  CHECK(items == highest.size());
  CHECK(persistence::announcement_payloads({}).empty());

  // And on a real server: the mark commits and each partition is heard.
  test::database db;
  persistence::migrate(db.dsn());
  persistence::listener_slot slot;
  auto listener = slot.get(db.dsn(), 1);
  auto sink = std::make_shared<heard_positions>();
  listener->subscribe(sink);
  persistence::outbox_store store(db.dsn(), 0, listener);
  REQUIRE(store.try_acquire_shard());
  std::vector<persistence::sent_position> acked;
  for (auto& [p, o] : highest)
    acked.push_back({0, p, o, true}); // no such row: only the announcement
  CHECK(store.mark_sent(store.current_epoch(), acked) ==
        persistence::mark_result::marked);
  REQUIRE(
    test::wait_until([&] { return sink->size() == highest.size(); }, 10s));
  std::lock_guard<std::mutex> guard{sink->mtx};
  CHECK(sink->heard == highest);
}
