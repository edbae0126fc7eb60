// An operator's control of a consumer on two nodes (issue 42.5): two
// `eventforge serve` processes share one PostgreSQL and the 3-broker
// in-process cluster. `eventforge consumer pause billing` is durable and
// obeyed by both nodes' members (they leave the group; billing applies
// nothing while fulfillment goes on); a reset is refused while billing
// runs, then rewinds its committed offsets to the log start and says how
// many records will be read again; after the resume every order is applied
// by billing exactly once (the re-read is suppressed by the idempotency
// guard) and nothing is lost or doubled.

#include "kafka/offsets.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>

#include <csignal>
#include <fstream>
#include <numeric>

using namespace ef;
using namespace std::chrono_literals;

namespace {

struct two_nodes {
  test::database db;
  test::temp_dir dir;
  kafka::embedded_broker broker{3, {{"orders", 6}, {"orders.dlq", 6}}};
  config::settings cfg = [] {
    auto c = test::test_settings();
    c.kafka.partitions = 6;
    return c;
  }();
  std::vector<std::unique_ptr<test::child_process>> nodes;
  std::vector<std::string> urls;

  two_nodes() {
    for (auto name : {"node-a", "node-b"}) {
      nodes.push_back(std::make_unique<test::child_process>(
        test::serve_command(
          db.dsn(), broker.bootstrap_servers(),
          {"--kafka.partitions=6", std::string("--node.name=") + name}),
        dir.path + "/" + name + ".log"));
      auto ready = nodes.back()->await_line("ready");
      REQUIRE_FALSE(ready.empty());
      urls.push_back(test::ready_field(ready, "http"));
    }
  }

  /// `eventforge consumer ARGS` against this system.
  std::pair<int, std::string> consumer(const std::string& args) {
    return test::run_command(test::eventforge_binary() + " consumer " + args +
                             " --database.url='" + db.dsn() +
                             "' --kafka.brokers=" + broker.bootstrap_servers() +
                             " --kafka.partitions=6 --log.level=warn");
  }

  void place(int n, const std::string& customer) {
    for (int i = 0; i < n; ++i)
      REQUIRE(test::post_json(urls[i % 2], "/orders",
                              test::order_body(customer, 1, 100))
                .first == 201);
  }

  long applied(const std::string& consumer) {
    return db.scalar<long>(
      "SELECT count(*) FROM processed_events WHERE consumer = '" + consumer +
      "'");
  }

  long members(const std::string& consumer, const std::string& state) {
    return db.scalar<long>(
      "SELECT count(DISTINCT node) FROM consumer_members WHERE consumer = '" +
      consumer + "' AND state = '" + state +
      "' AND seen_at > clock_timestamp() - interval '3 seconds'");
  }
};

} // namespace

TEST_CASE("pause_reset_and_resume_a_consumer_on_two_nodes_and_every_order_is_"
          "applied_once") {
  two_nodes f;
  f.place(12, "cc");
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(f.db, f.cfg, f.broker.bootstrap_servers()); },
    60s));
  REQUIRE(
    test::wait_until([&] { return f.members("billing", "consuming") == 2; }));
  // A reset while billing runs is refused, and moves nothing.
  auto before = kafka::committed_offsets(f.broker.bootstrap_servers(),
                                         "eventforge.billing", "orders", 6);
  auto refused = f.consumer("reset billing --to-earliest");
  INFO(refused.second);
  CHECK(refused.first == 1);
  CHECK(refused.second.find("billing is not paused") != std::string::npos);
  CHECK(kafka::committed_offsets(f.broker.bootstrap_servers(),
                                 "eventforge.billing", "orders", 6) == before);
  // Pause: durable, and both nodes' members leave the group.
  auto paused = f.consumer("pause billing");
  INFO(paused.second);
  REQUIRE(paused.first == 0);
  CHECK(f.db.scalar<bool>(
    "SELECT paused FROM consumer_controls WHERE consumer = 'billing'"));
  REQUIRE(test::wait_until([&] {
    return f.members("billing", "paused") == 2 &&
           f.members("billing", "consuming") == 0;
  }));
  // Billing applies nothing while fulfillment applies the new orders.
  auto billing_before = f.applied("billing");
  auto fulfillment_before = f.applied("fulfillment");
  f.place(6, "cc-paused");
  REQUIRE(test::wait_until(
    [&] { return f.applied("fulfillment") == fulfillment_before + 6; }, 60s));
  CHECK(f.applied("billing") == billing_before);
  // Both nodes say so: a series, and status.
  for (auto& url : f.urls) {
    httplib::Client cli(url);
    auto m = cli.Get("/metrics");
    REQUIRE(m);
    CHECK(m->body.find("consumer_paused{consumer=\"billing\"} 1") !=
          std::string::npos);
  }
  auto status =
    test::run_command(test::eventforge_binary() + " status --database.url='" +
                      f.db.dsn() + "' --log.level=warn");
  INFO(status.second);
  CHECK(status.second.find("consumer billing: PAUSED by cli:") !=
        std::string::npos);
  CHECK(status.second.find("consumer fulfillment: running; members: node-a") !=
        std::string::npos);
  // Reset to the log start: everything billing committed is read again.
  auto committed = kafka::committed_offsets(f.broker.bootstrap_servers(),
                                            "eventforge.billing", "orders", 6);
  long expected = 0;
  for (auto o : committed)
    expected += std::max<std::int64_t>(o, 0);
  auto reset = f.consumer("reset billing --to-earliest");
  INFO(reset.second);
  REQUIRE(reset.first == 0);
  CHECK(reset.second.find("billing: " + std::to_string(expected) +
                          " record(s) will be read again") !=
        std::string::npos);
  auto now = kafka::committed_offsets(f.broker.bootstrap_servers(),
                                      "eventforge.billing", "orders", 6);
  CHECK(std::accumulate(now.begin(), now.end(), 0L) == 0);
  CHECK(f.db.scalar<long>("SELECT count(*) FROM consumer_control_log WHERE "
                          "consumer = 'billing' AND action = 'reset'") == 1);
  // Resume: both nodes consume again, every order applied by billing once.
  REQUIRE(f.consumer("resume billing").first == 0);
  bool settled = test::wait_until(
    [&] { return test::quiescent(f.db, f.cfg, f.broker.bootstrap_servers()); },
    90s);
  if (!settled)
    for (auto name : {"node-a", "node-b"}) {
      std::ifstream in(f.dir.path + "/" + name + ".log");
      std::string line, tail;
      while (std::getline(in, line))
        if (line.find("billing") != std::string::npos)
          tail += line + "\n";
      WARN(name << ":\n"
                << tail.substr(tail.size() > 6000 ? tail.size() - 6000 : 0));
    }
  REQUIRE(settled);
  CHECK(f.applied("billing") == 18);
  // The verifier, as an operator runs it, after the re-read.
  auto verified = test::run_command(
    test::eventforge_binary() + " verify --database.url='" + f.db.dsn() +
    "' --kafka.brokers=" + f.broker.bootstrap_servers() +
    " --kafka.partitions=6 --log.level=warn");
  INFO(verified.second);
  CHECK(verified.first == 0);
  CHECK(f.db.scalar<long>("SELECT count(*) FROM orders") == 18);
  REQUIRE(
    test::wait_until([&] { return f.members("billing", "consuming") == 2; }));
  for (auto& n : f.nodes) {
    n->signal(SIGTERM);
    CHECK(n->wait() == 0);
  }
}

TEST_CASE("consumer_commands_refuse_bad_input_with_the_cause_and_change_"
          "nothing") {
  test::database db;
  REQUIRE(test::run_command(test::eventforge_binary() +
                            " migrate --database.url='" + db.dsn() + "'")
            .first == 0);
  auto run = [&](const std::string& args) {
    return test::run_command(test::eventforge_binary() + " consumer " + args +
                             " --database.url='" + db.dsn() +
                             "' --log.level=warn");
  };
  struct bad {
    const char* args;
    const char* says;
  };
  for (auto b : {bad{"pause billling", "no consumer named billling"},
                 bad{"pause", "consumer pause needs a NAME"},
                 bad{"frobnicate billing", "unknown consumer action"},
                 bad{"reset billing --kafka.brokers=127.0.0.1:1",
                     "exactly one of --to-earliest"},
                 bad{"reset billing --to-offset 3 --kafka.brokers=127.0.0.1:1",
                     "must be PARTITION:OFFSET"},
                 bad{"reset billing --to-time yesterday "
                     "--kafka.brokers=127.0.0.1:1",
                     "must be UTC"}}) {
    auto [code, out] = run(b.args);
    INFO(b.args << ": " << out);
    CHECK(code == 2);
    CHECK(out.find(b.says) != std::string::npos);
  }
  CHECK(db.scalar<long>("SELECT count(*) FROM consumer_controls") == 0);
  CHECK(db.scalar<long>("SELECT count(*) FROM consumer_control_log") == 0);
}
