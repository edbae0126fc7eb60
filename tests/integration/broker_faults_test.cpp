// Kafka-side faults, as a real three-broker cluster fails: a partition's
// leader moves between publish and acknowledgement, a broker goes away for
// seconds, a broker answers slowly, requests are refused with retriable
// errors, a group's coordinator moves. Each runs against `eventforge broker
// --kafka.embedded-brokers=3` through its fault commands while orders are
// placed; afterwards the verifier must hold from durable state: every
// order's event applied exactly once per consumer, nothing unsent, every
// group committed to the log end (0 lost, 0 doubled).

#include "kafka/offsets.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/embedded/verifier.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <iostream>
#include <thread>

using namespace ef;

namespace {

struct fault_fixture {
  test::database db;
  test::temp_dir logs;
  test::broker_process broker{logs.path + "/broker.log",
                              {"--kafka.embedded-brokers=3"}};
  config::settings cfg = test::test_settings();
  std::unique_ptr<test::tree> t;
  std::atomic<int> placed{0};

  fault_fixture() {
    REQUIRE_FALSE(broker.brokers().empty());
    t =
      std::make_unique<test::tree>(cfg, endpoints{db.dsn(), broker.brokers()});
  }

  /// Places `n` orders as a client that needs them would: a refusal while
  /// the cluster is failing is retried with the same idempotency key.
  void place(int n, const std::string& who) {
    for (int i = 0; i < n; ++i) {
      auto key = who + "-" + std::to_string(placed.load());
      auto body = test::order_body(who, 1, 100 + i);
      for (int attempt = 0;; ++attempt) {
        auto [status, reply] = test::post_json(t->url(), "/orders", body, key);
        if (status == 201 || status == 200)
          break;
        REQUIRE(attempt < 50);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      ++placed;
    }
  }

  /// Runs `faults` while a client places orders (one every few
  /// milliseconds until the faults are over), then waits for the system to
  /// settle and checks it from durable state.
  void run(const std::function<void()>& faults) {
    place(20, "warm-up");
    std::atomic<bool> done{false};
    std::thread client([&] {
      while (!done) {
        place(1, "during");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    faults();
    done = true;
    client.join();
    CHECK(broker.fault("clear").rfind("fault ok", 0) == 0);
    REQUIRE(test::wait_until(
      [&] { return test::quiescent(db, cfg, broker.brokers()); },
      std::chrono::seconds(120)));
    auto v = app::verify(cfg, db.dsn(), broker.brokers());
    INFO(app::to_text(v));
    CHECK(v.ok());
    CHECK(v.counts.orders == placed.load());
    CHECK(v.counts.unsent == 0);
    CHECK(v.counts.marks == 2 * v.counts.events);
    CHECK(v.counts.effects == 2 * v.counts.events);
    auto& m = t->metrics();
    std::cout << "fault run: orders " << v.counts.orders << ", records "
              << v.records << " (" << v.duplicates << " duplicates)"
              << ", publish errors " << m.sum("relay_publish_errors_total")
              << ", deliveries " << m.sum("consumer_deliveries_total")
              << ", duplicates suppressed "
              << m.sum("consumer_duplicates_suppressed_total") << ", retries "
              << m.sum("consumer_retries_total") << ", rebalances "
              << m.sum("consumer_rebalances_total") << std::endl;
  }

  void ok(const std::string& command) {
    auto answer = broker.fault(command);
    INFO(command);
    REQUIRE(answer.rfind("fault ok: ", 0) == 0);
  }
};

} // namespace

TEST_CASE("partition_leaders_move_while_orders_are_published_and_nothing_is_"
          "lost_or_doubled") {
  fault_fixture f;
  int moves = 0;
  f.run([&] {
    for (; moves < 15; ++moves) {
      for (int p = 0; p < f.cfg.kafka.partitions; ++p)
        f.ok("leader orders " + std::to_string(p) + " " +
             std::to_string((p + moves) % 3 + 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  std::cout << "leader moves: " << moves * f.cfg.kafka.partitions << std::endl;
}

TEST_CASE("a_broker_down_for_five_seconds_mid_load_loses_and_doubles_"
          "nothing") {
  fault_fixture f;
  f.run([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    f.ok("down 2");
    std::this_thread::sleep_for(std::chrono::seconds(5));
    f.ok("up 2");
  });
}

TEST_CASE("a_slow_broker_delays_but_loses_and_doubles_nothing") {
  fault_fixture f;
  f.run([&] {
    for (int b = 1; b <= 3; ++b) {
      f.ok("rtt " + std::to_string(b) + " 400");
      std::this_thread::sleep_for(std::chrono::seconds(1));
      f.ok("rtt " + std::to_string(b) + " 0");
    }
  });
}

TEST_CASE("requests_refused_with_retriable_errors_are_retried_and_nothing_is_"
          "lost_or_doubled") {
  fault_fixture f;
  int pushed = 0;
  f.run([&] {
    // Each kind of request the pipeline makes, refused a few times over
    // while orders flow: produce (the relay), fetch and offset commit (the
    // members), group membership, metadata and coordinator lookups.
    const char* commands[] = {
      "errors produce 5 NOT_LEADER_FOR_PARTITION",
      "errors produce 3 REQUEST_TIMED_OUT",
      "errors fetch 5 NOT_LEADER_FOR_PARTITION",
      "errors offset-commit 3 COORDINATOR_NOT_AVAILABLE",
      "errors offset-commit 2 REQUEST_TIMED_OUT",
      "errors heartbeat 3 COORDINATOR_NOT_AVAILABLE",
      "errors join-group 2 COORDINATOR_LOAD_IN_PROGRESS",
      "errors sync-group 2 COORDINATOR_NOT_AVAILABLE",
      "errors metadata 3 LEADER_NOT_AVAILABLE",
      "errors find-coordinator 3 COORDINATOR_NOT_AVAILABLE",
      "errors list-offsets 3 NOT_LEADER_FOR_PARTITION",
      "errors offset-fetch 2 COORDINATOR_LOAD_IN_PROGRESS",
    };
    for (auto* c : commands) {
      f.ok(c);
      ++pushed;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  std::cout << "error pushes: " << pushed << std::endl;
}

TEST_CASE("group_coordinators_move_and_the_groups_come_back_without_"
          "skipping") {
  fault_fixture f;
  int moves = 0;
  f.run([&] {
    for (; moves < 8; ++moves) {
      for (auto group : {"eventforge.fulfillment", "eventforge.billing"})
        f.ok(std::string("coordinator ") + group + " " +
             std::to_string(moves % 3 + 1));
      std::this_thread::sleep_for(std::chrono::milliseconds(750));
    }
  });
  std::cout << "coordinator moves: " << 2 * moves << std::endl;
}

TEST_CASE("bad_fault_commands_are_answered_with_the_cause_and_change_"
          "nothing") {
  test::temp_dir logs;
  test::broker_process broker{logs.path + "/broker.log",
                              {"--kafka.embedded-brokers=3"}};
  CHECK(broker.fault("down 4") ==
        "fault error: no broker 4: the cluster has brokers 1 to 3");
  CHECK(broker.fault("leader orders 6 1") ==
        "fault error: no partition 6 of orders: it has 6");
  CHECK(broker.fault("leader nosuch 0 1") ==
        "fault error: no topic \"nosuch\"");
  CHECK(broker.fault("errors produce 0 NOT_LEADER_FOR_PARTITION")
          .rfind("fault error: count must be 1 to 1000", 0) == 0);
  CHECK(broker.fault("errors produce 1 NO_SUCH_ERROR")
          .rfind("fault error: unknown Kafka error", 0) == 0);
  CHECK(broker.fault("rtt 1 slow").rfind("fault error: rtt must be", 0) == 0);
  CHECK(broker.fault("reboot").rfind("fault error: unknown command", 0) == 0);
  // Nothing changed: the leaders are where creation put them, and every
  // partition still answers.
  CHECK(broker.fault("leader orders 0 1") ==
        "fault ok: leader of orders/0 moved from broker 1 to 1");
  CHECK(kafka::log_end_offsets(broker.brokers(), "orders", 6, 5000) ==
        std::vector<std::int64_t>(6, 0));
}
