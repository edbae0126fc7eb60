// One test per failure window of the brief (section 5): the named crash
// point fires (a real actor failure), the supervisor restarts the actor, and
// the durable outcome is checked from rows and committed offsets.

#include "kafka/offsets.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/embedded/verifier.hpp>

#include <catch2/catch.hpp>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// A system where exactly one crash point fires once for every event.
struct window_fixture {
  explicit window_fixture(const std::string& point) {
    cfg.chaos.points = {point};
    cfg.chaos.rate = 1.0;
    cfg.chaos.max_crashes_per_event = 1;
    t = std::make_unique<test::tree>(
      cfg, endpoints{db.dsn(), broker.bootstrap_servers()});
  }

  void place(int n) {
    for (int i = 0; i < n; ++i) {
      auto [status, body] = test::post_json(
        t->url(), "/orders", test::order_body("c" + std::to_string(i), 1, 500),
        "key-" + std::to_string(i));
      REQUIRE(status == 201);
    }
  }

  void settle() {
    REQUIRE(test::wait_until(
      [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  }

  std::uint64_t counter(const std::string& series) {
    return test::counters(t->system(), t->root())[series];
  }

  void check_exactly_once() {
    auto v = app::verify(cfg, db.dsn(), broker.bootstrap_servers());
    INFO(app::to_text(v));
    CHECK(v.ok());
    CHECK(db.scalar<int>("SELECT count(*) FROM business_effects") ==
          2 * db.scalar<int>("SELECT count(*) FROM outbox"));
  }

  std::vector<kafka::stored_record> records() {
    return kafka::read_all(broker.bootstrap_servers(), cfg.kafka.topic,
                           cfg.kafka.partitions);
  }

  test::database db;
  config::settings cfg = test::test_settings();
  kafka::embedded_broker broker{1, {{cfg.kafka.topic, cfg.kafka.partitions}}};
  std::unique_ptr<test::tree> t;
};

} // namespace

TEST_CASE("relay_stopped_after_broker_ack_before_mark_puts_the_event_on_the_"
          "topic_twice_with_one_effect_per_consumer") {
  window_fixture f("relay.after_ack_before_mark");
  f.place(1);
  f.settle();
  auto recs = f.records();
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].event_id == recs[1].event_id);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM outbox") == 1);
  CHECK(f.counter(R"(actor_restarts_total{kind="relay",reason="injected"})") ==
        1);
  f.check_exactly_once();
}

TEST_CASE("relay_stopped_with_sends_in_flight_leaves_rows_unsent_and_"
          "republishes_them") {
  window_fixture f("relay.after_publish_before_ack");
  f.place(3);
  f.settle();
  CHECK(f.db.scalar<int>("SELECT count(*) FROM outbox WHERE sent_at IS NULL") ==
        0);
  CHECK(f.counter(
          R"(chaos_crashes_total{point="relay.after_publish_before_ack"})") >=
        1);
  // In-flight records may or may not have landed before the crash.
  CHECK(f.records().size() >= 3);
  f.check_exactly_once();
}

TEST_CASE("consumer_stopped_inside_the_handler_transaction_rolls_back_and_"
          "applies_once_on_redelivery") {
  window_fixture f("consumer.before_db_commit");
  f.place(5);
  f.settle();
  // Every event crashed each consumer once before COMMIT: 10 crashes, and
  // not one of them left a mark or an effect behind.
  CHECK(f.counter(
          R"(chaos_crashes_total{point="consumer.before_db_commit"})") == 10);
  CHECK(f.counter(
          R"(actor_restarts_total{kind="partition",reason="injected"})") == 10);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM processed_events") == 10);
  f.check_exactly_once();
}

TEST_CASE("consumer_stopped_after_db_commit_before_offset_commit_is_"
          "redelivered_with_one_mark_and_one_effect") {
  window_fixture f("consumer.after_db_before_offset");
  f.place(5);
  f.settle();
  for (auto c : {"billing", "fulfillment"}) {
    INFO(c);
    // Each event was committed, the actor died before the offset moved, the
    // record came back, and the guard suppressed it.
    CHECK(f.counter("consumer_duplicates_suppressed_total{consumer=\"" +
                    std::string(c) + "\"}") >= 5);
  }
  CHECK(f.db.scalar<int>("SELECT count(*) FROM processed_events") == 10);
  f.check_exactly_once();
}

TEST_CASE("api_stopped_after_commit_before_reply_gives_the_keyed_retry_the_"
          "same_order") {
  window_fixture f("api.after_commit_before_reply");
  auto body = test::order_body("c", 2, 700);
  auto [s1, b1] = test::post_json(f.t->url(), "/orders", body, "the-key");
  CHECK(s1 == 503); // the reply was lost with the crashed worker
  CHECK(f.db.scalar<int>("SELECT count(*) FROM orders") == 1);
  auto [s2, b2] = test::post_json(f.t->url(), "/orders", body, "the-key");
  REQUIRE(s2 == 201);
  CHECK(test::json_field(b2, "order_id") ==
        f.db.scalar<std::string>("SELECT id::text FROM orders"));
  CHECK(f.db.scalar<int>("SELECT count(*) FROM orders") == 1);
  f.settle();
  f.check_exactly_once();
}

TEST_CASE("restarting_everything_changes_no_result") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.chaos.points = {"api.after_commit_before_reply",
                      "relay.after_ack_before_mark",
                      "consumer.after_db_before_offset"};
  cfg.chaos.rate = 0.1;
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  app::verification first;
  {
    test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
    for (int i = 0; i < 60; ++i) {
      std::pair<int, std::string> r;
      // Keyed retries ride out the injected API crashes.
      REQUIRE(test::wait_until([&] {
        r = test::post_json(t.url(), "/orders", test::order_body("c", 1, 100),
                            "k" + std::to_string(i));
        return r.first == 201;
      }));
    }
    REQUIRE(test::wait_until(
      [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
    first = app::verify(cfg, db.dsn(), broker.bootstrap_servers());
    INFO(app::to_text(first));
    REQUIRE(first.ok());
  }
  // A whole new tree on the same database and broker: nothing to redo.
  // Quiescence alone would hold before its consumers have even joined, so
  // new orders go in until every partition has a record past the first run's
  // log end; once those are applied and committed, each consumer has read
  // every partition from its committed offset on, and any old event it
  // re-applied would show as an extra effect or mark.
  auto brokers = broker.bootstrap_servers();
  auto ends_before =
    kafka::log_end_offsets(brokers, cfg.kafka.topic, cfg.kafka.partitions);
  test::tree again(cfg, {db.dsn(), brokers});
  auto every_partition_grew = [&] {
    auto ends =
      kafka::log_end_offsets(brokers, cfg.kafka.topic, cfg.kafka.partitions);
    for (size_t p = 0; p < ends.size(); ++p)
      if (ends[p] <= ends_before[p])
        return false;
    return true;
  };
  int added = 0;
  while (!every_partition_grew()) {
    REQUIRE(added < 200);
    std::pair<int, std::string> r;
    REQUIRE(test::wait_until([&] {
      r = test::post_json(again.url(), "/orders", test::order_body("n", 1, 100),
                          "n" + std::to_string(added));
      return r.first == 201;
    }));
    ++added;
    // Let the relay publish before deciding whether more are needed.
    REQUIRE(test::wait_until([&] {
      return db.scalar<int>(
               "SELECT count(*) FROM outbox WHERE sent_at IS NULL") == 0;
    }));
  }
  REQUIRE(test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));
  auto second = app::verify(cfg, db.dsn(), brokers);
  INFO(app::to_text(second));
  CHECK(second.ok());
  CHECK(second.counts.orders == 60 + added);
  CHECK(second.counts.effects == first.counts.effects + 2 * added);
  CHECK(second.counts.marks == first.counts.marks + 2 * added);
}
