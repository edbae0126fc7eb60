// Chaos at two levels: `eventforge chaos` (crash points inside one process)
// and whole processes SIGKILLed while another keeps working.

#include "tests/support/harness.hpp"
#include <eventforge/embedded/verifier.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <mutex>
#include <thread>
#include <tuple>

using namespace ef;
using namespace std::chrono_literals;

TEST_CASE("chaos_command_with_every_crash_point_keeps_every_invariant") {
  test::temp_dir dir;
  test::seed_cluster(dir.path + "/pg");
  auto report = dir.path + "/report.json";
  auto [code, out] = test::run_command(
    test::eventforge_binary() +
    " chaos --orders 400 --concurrency 8 --seed 3 "
    "--rate 0.05 --kafka.session-timeout-ms=6000 --log.level=error "
    "--database.data-dir=" +
    dir.path + "/pg --report " + report);
  INFO(out);
  REQUIRE(code == 0);
  std::ifstream f(report);
  auto r = nlohmann::json::parse(f);
  CHECK(r["ok"] == true);
  CHECK(r["orders_created"] == 400);
  CHECK(r["verification"]["violations"].empty());
  CHECK(r["restarts_total"].get<int>() > 0);
  // Every enabled point fired at least once.
  CHECK(r["crashes_by_point"].size() == 5);
  // Duplicates were delivered and suppressed, never applied.
  CHECK(r["business_changes"] == 2 * r["logical_events"].get<int>());
}

namespace {

/// Runs `eventforge chaos ARGS --report FILE` in a fresh data dir; returns
/// (exit code, report, output).
std::tuple<int, nlohmann::json, std::string>
chaos_run(const std::string& args) {
  test::temp_dir dir;
  test::seed_cluster(dir.path + "/pg");
  auto report = dir.path + "/report.json";
  auto [code, out] = test::run_command(
    test::eventforge_binary() + " chaos " + args +
    " --kafka.session-timeout-ms=6000 --log.level=error --database.data-dir=" +
    dir.path + "/pg --report " + report);
  std::ifstream f(report);
  auto r = f ? nlohmann::json::parse(f, nullptr, false) : nlohmann::json{};
  return {code, r, out};
}

} // namespace

TEST_CASE("chaos_with_broker_restarts_keeps_every_invariant_and_the_same_"
          "seed_injects_the_same_crashes") {
  auto args = std::string("--orders 400 --concurrency 8 --seed 5 --rate 0.02 "
                          "--broker-restarts 2");
  auto [code1, r1, out1] = chaos_run(args);
  INFO(out1);
  REQUIRE(code1 == 0);
  auto [code2, r2, out2] = chaos_run(args);
  INFO(out2);
  REQUIRE(code2 == 0);
  for (auto* r : {&r1, &r2}) {
    CHECK((*r)["ok"] == true);
    CHECK((*r)["broker_restarts"] == 2);
    CHECK((*r)["verification"]["violations"].empty());
    CHECK((*r)["business_changes"] == 2 * (*r)["logical_events"].get<int>());
  }
  // Replayable: the same logical events crashed at the same points.
  CHECK(r1["crashes"]["count"].get<int>() > 0);
  CHECK(r1["crashes"]["digest"] == r2["crashes"]["digest"]);
  CHECK(r1["crashes_by_point"] == r2["crashes_by_point"]);
}

TEST_CASE("chaos_with_every_kafka_fault_and_the_crash_points_on_three_"
          "brokers_keeps_every_invariant_and_replays_its_faults") {
  auto args = std::string(
    "--orders 600 --concurrency 8 --seed 9 --rate 0.02 "
    "--kafka.embedded-brokers=3 --broker-faults=all --broker-fault-count=10");
  auto [code1, r1, out1] = chaos_run(args);
  INFO(out1);
  REQUIRE(code1 == 0);
  CHECK(r1["ok"] == true);
  CHECK(r1["verification"]["violations"].empty());
  CHECK(r1["business_changes"] == 2 * r1["logical_events"].get<int>());
  // Every kind, twice, in turn.
  CHECK(r1["broker_faults"]["count"] == 10);
  for (auto kind : {"leader", "down", "rtt", "errors", "coordinator"})
    CHECK(r1["broker_faults"]["by_kind"][kind] == 2);
  CHECK(r1["crashes"]["count"].get<int>() > 0);
  // The same seed injects the same Kafka faults at the same points.
  auto [code2, r2, out2] = chaos_run(args);
  INFO(out2);
  REQUIRE(code2 == 0);
  CHECK(r2["broker_faults"]["injected"] == r1["broker_faults"]["injected"]);
  CHECK(r2["broker_faults"]["digest"] == r1["broker_faults"]["digest"]);
}

TEST_CASE("chaos_refuses_broker_faults_it_cannot_inject_before_it_starts_"
          "anything") {
  test::temp_dir dir;
  for (auto args : {"--broker-faults=leader,bogus --kafka.embedded-brokers=3",
                    "--broker-faults=down", // one broker: the whole cluster
                    "--broker-faults=rtt --kafka.brokers=127.0.0.1:1",
                    "--broker-faults=rtt --broker-restarts 1"}) {
    auto [code, out] =
      test::run_command(test::eventforge_binary() + " chaos --orders 10 " +
                        args + " --database.data-dir=" + dir.path + "/pg 2>&1");
    INFO(args << ": " << out);
    CHECK(code == 2);
    CHECK(out.rfind("chaos: ", 0) == 0);
  }
  // Nothing was started: no cluster was created.
  CHECK_FALSE(std::ifstream(dir.path + "/pg/PG_VERSION").good());
}

TEST_CASE("chaos_backlog_published_past_the_broker_retention_is_repaired_"
          "from_the_outbox_and_applied_once") {
  // One partition holds about 10,000 small records: 14,000 published while
  // the consumers are down leave the oldest ones trimmed before they read.
  auto [code, r, out] =
    chaos_run("--orders 50 --rate 0 --backlog 14000 --backlog-past-retention "
              "--kafka.partitions=1");
  INFO(out);
  REQUIRE(code == 0);
  CHECK(r["ok"] == true);
  CHECK(r["logical_events"].get<long>() >= 14050);
  CHECK(r["consumer_gaps"].get<long>() >= 1);
  CHECK(r["events_republished"].get<long>() > 0);
  CHECK(r["verification"]["violations"].empty());
}

TEST_CASE("two_serve_processes_one_repeatedly_sigkilled_lose_no_order_and_"
          "apply_nothing_twice") {
  test::database db;
  test::temp_dir logs;
  auto cfg = test::test_settings();
  test::broker_process broker(logs.path + "/broker.log");
  auto brokers = broker.brokers();
  REQUIRE_FALSE(brokers.empty());
  auto args = test::serve_command(db.dsn(), brokers);
  std::unique_ptr<test::child_process> serve[2];
  std::string urls[2];
  std::mutex mtx;
  auto launch = [&](int i) {
    serve[i] = std::make_unique<test::child_process>(
      args, logs.path + "/serve" + std::to_string(i) + ".log");
    auto url = test::ready_field(serve[i]->await_line("ready"), "http");
    REQUIRE_FALSE(url.empty());
    std::lock_guard<std::mutex> guard{mtx};
    urls[i] = url;
  };
  launch(0);
  launch(1);

  // One client places orders against whichever process answers, retrying
  // each order with its key until it is accepted, as a real client would,
  // for at most two minutes per order: past that it stops and says why.
  // The client works in slices of orders/8, and the main thread kills
  // process k%2 once slice k is placed. The client may run one slice ahead
  // of the kills, never two: kill k lands while slice k+1 is being placed
  // (requests in flight, the victim mid-pipeline), and always with orders
  // still to place, on a fast machine or a slow one.
  constexpr int orders = 400;
  constexpr int kills = 6;
  constexpr int slice = orders / 8;
  std::atomic<int> accepted{0};
  int killed = 0; // under mtx, signalled by kill_done
  std::condition_variable kill_done;
  std::atomic<bool> client_done{false};
  std::atomic<bool> aborted{false}; // the main thread gave up: stop
  std::string stalled; // written by the client thread, read after join
  std::thread client([&] {
    for (int i = 0; i < orders && stalled.empty() && !aborted; ++i) {
      int ahead = i / slice - 1; // the kills this slice must come after
      if (i % slice == 0 && ahead > 0 && ahead <= kills) {
        std::unique_lock<std::mutex> lock{mtx};
        kill_done.wait(lock, [&] { return killed >= ahead || aborted; });
      }
      auto deadline = std::chrono::steady_clock::now() + 120s;
      for (int attempt = 0; !aborted; ++attempt) {
        std::string url;
        {
          std::lock_guard<std::mutex> guard{mtx};
          url = urls[attempt % 2];
        }
        auto [status, body] = test::post_json(
          url, "/orders",
          test::order_body("c" + std::to_string(i % 30), 1, 100 + i),
          "order-" + std::to_string(i));
        if (status == 201) {
          ++accepted;
          break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
          stalled = "order " + std::to_string(i) + " not accepted after " +
                    std::to_string(attempt + 1) + " attempts in 120 s; last " +
                    "answer " + std::to_string(status) + " " + body;
          break;
        }
        std::this_thread::sleep_for(10ms); // the client's retry pace
      }
    }
    client_done = true;
  });
  // However the main thread leaves this scope (a failed REQUIRE throws),
  // the client stops and is joined first.
  struct stop_client {
    std::atomic<bool>& aborted;
    std::thread& client;
    std::mutex& mtx;
    std::condition_variable& kill_done;
    ~stop_client() {
      if (client.joinable()) {
        {
          std::lock_guard<std::mutex> guard{mtx};
          aborted = true;
        }
        kill_done.notify_all();
        client.join();
      }
    }
  } stop_on_exit{aborted, client, mtx, kill_done};
  // Six kills, each after real work (paced by progress, not time).
  std::vector<int> accepted_at_kill;
  for (int round = 0; round < kills; ++round) {
    REQUIRE(test::wait_until(
      [&] { return accepted >= (round + 1) * slice || client_done; }, 300s));
    if (client_done)
      break; // it stalled: said below
    int victim = round % 2;
    accepted_at_kill.push_back(accepted);
    serve[victim]->signal(SIGKILL);
    CHECK(serve[victim]->wait() == 128 + SIGKILL);
    {
      std::lock_guard<std::mutex> guard{mtx};
      ++killed;
    }
    kill_done.notify_all();
    launch(victim);
  }
  client.join();
  INFO(stalled);
  REQUIRE(stalled.empty());
  REQUIRE(accepted_at_kill.size() == kills);
  for (int round = 0; round < kills; ++round) {
    CHECK(accepted_at_kill[round] >= (round + 1) * slice);
    CHECK(accepted_at_kill[round] <= (round + 2) * slice);
    CHECK(accepted_at_kill[round] < orders);
  }
  REQUIRE(
    test::wait_until([&] { return test::quiescent(db, cfg, brokers); }, 180s));
  auto v = app::verify(cfg, db.dsn(), brokers);
  INFO(app::to_text(v));
  CHECK(v.ok());
  CHECK(v.counts.orders == orders);
  CHECK(v.counts.effects == 2 * orders);
  for (auto& s : serve) {
    s->signal(SIGTERM);
    CHECK(s->wait() == 0);
  }
}
