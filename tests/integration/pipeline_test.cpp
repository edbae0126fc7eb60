// The whole pipeline on real components: HTTP -> PostgreSQL outbox -> relay
// shards -> Kafka protocol -> partition actors -> exactly one effect.

#include "kafka/offsets.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace ef;
using namespace std::chrono_literals;

TEST_CASE("thousand_orders_with_two_hundred_cancels_give_one_effect_per_"
          "consumer_per_event") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(3, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});

  // Warm up: wait for both groups to own their partitions (the first join
  // takes seconds), so the latency below is the steady state.
  auto [ws, wb] =
    test::post_json(t.url(), "/orders", test::order_body("warm-up", 1, 1));
  REQUIRE(ws == 201);
  REQUIRE(test::wait_until([&] {
    return db.scalar<int>("SELECT count(*) FROM processed_events") == 2;
  }));
  db.exec("TRUNCATE orders, order_items, outbox, processed_events, "
          "business_effects, accounts, idempotency_keys");

  constexpr int orders = 1000;
  constexpr int cancels = 200;
  constexpr int clients = 8;
  std::vector<std::string> ids(orders);
  std::atomic<int> failures{0};
  auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      for (int i = c; i < orders; i += clients) {
        auto [status, body] =
          test::post_json(t.url(), "/orders",
                          test::order_body("customer-" + std::to_string(i % 50),
                                           1 + i % 3, 100 + i));
        if (status != 201)
          ++failures;
        ids[i] = test::json_field(body, "order_id");
      }
    });
  for (auto& th : threads)
    th.join();
  auto accept_secs =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
      .count();
  REQUIRE(failures == 0);
  // Cancel every fifth order: 200 cancels.
  for (int i = 0; i < orders; i += orders / cancels) {
    auto [status, body] =
      test::post_json(t.url(), "/orders/" + ids[i] + "/cancel", "");
    INFO(body);
    REQUIRE(status == 202);
  }

  auto events = orders + cancels;
  bool drained = test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }, 120s);
  auto drain_secs =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
      .count();
  REQUIRE(drained);

  // I1: every order has its OrderCreated row and vice versa.
  CHECK(db.scalar<int>("SELECT count(*) FROM orders") == orders);
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox") == events);
  CHECK(db.scalar<int>(
          "SELECT count(*) FROM orders o FULL JOIN (SELECT order_id FROM "
          "outbox WHERE event_type = 'OrderCreated') e ON e.order_id = o.id "
          "WHERE o.id IS NULL OR e.order_id IS NULL") == 0);
  // I3: exactly one mark and one effect per consumer per event.
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects") == 2 * events);
  CHECK(db.scalar<int>(
          "SELECT count(*) FROM outbox o CROSS JOIN (VALUES ('fulfillment'), "
          "('billing')) c(consumer) WHERE (SELECT count(*) FROM "
          "business_effects b WHERE b.event_id = o.event_id AND b.consumer = "
          "c.consumer) <> 1 OR NOT EXISTS (SELECT 1 FROM processed_events p "
          "WHERE p.event_id = o.event_id AND p.consumer = c.consumer)") == 0);
  // Balances: each account owes the totals of its non-cancelled orders.
  CHECK(db.scalar<int>(
          "SELECT count(*) FROM accounts a FULL JOIN (SELECT customer_id, "
          "sum(total_cents) AS owed FROM orders WHERE cancel_requested_at IS "
          "NULL GROUP BY customer_id) o USING (customer_id) WHERE "
          "coalesce(a.balance_cents, 0) <> -coalesce(o.owed, 0)") == 0);
  CHECK(db.scalar<std::int64_t>("SELECT -sum(balance_cents) FROM accounts") ==
        db.scalar<std::int64_t>("SELECT sum(total_cents) FROM orders "
                                "WHERE cancel_requested_at IS NULL"));
  CHECK(db.scalar<int>("SELECT count(*) FROM orders WHERE status = "
                       "'cancelled'") == cancels);
  CHECK(db.scalar<int>("SELECT count(*) FROM orders WHERE status = "
                       "'processed'") == orders - cancels);
  // I4: per order and consumer, created was applied before cancelled, so
  // every cancel refunded a real debit.
  CHECK(db.scalar<int>(
          "SELECT count(*) FROM (SELECT b.consumer, b.order_id, "
          "array_agg(o.event_type ORDER BY b.id) AS seen FROM business_effects "
          "b JOIN outbox o USING (event_id) GROUP BY 1, 2) x WHERE seen NOT IN "
          "(ARRAY['OrderCreated'], ARRAY['OrderCreated', 'OrderCancelled'])") ==
        0);
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects WHERE kind IN "
                       "('refund_skipped', 'debit_skipped', "
                       "'fulfill_skipped')") == 0);
  // I5 and drain: committed offsets equal the log end, which holds each
  // event once (no crash happened, so no duplicate was published).
  auto ends = kafka::log_end_offsets(broker.bootstrap_servers(),
                                     cfg.kafka.topic, cfg.kafka.partitions);
  std::int64_t total = 0;
  for (auto e : ends)
    total += e;
  CHECK(total == events + 1); // plus the warm-up order

  auto p50 = db.scalar<double>(
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM "
    "b.applied_at - o.created_at) * 1000) FROM business_effects b JOIN "
    "outbox "
    "o USING (event_id)");
  auto p99 = db.scalar<double>(
    "SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM "
    "b.applied_at - o.created_at) * 1000) FROM business_effects b JOIN "
    "outbox "
    "o USING (event_id)");
  WARN("accepted " << orders << " orders in " << accept_secs << " s ("
                   << orders / accept_secs << " orders/s over HTTP, " << clients
                   << " clients); all " << events
                   << " events applied by both consumers after " << drain_secs
                   << " s; outbox insert -> effect latency p50 " << p50
                   << " ms, p99 " << p99 << " ms");
}
