// What an operator sees of Kafka during its faults (issue 42), on the
// 3-broker in-process cluster with faults from its own fault commands: the
// clients' statistics as series, /readyz naming a broker that is down (one
// of three: ready, degraded; all: not ready), and a consumer lag that is
// absent while it cannot be read, never a frozen value.

#include "kafka/client_health.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/config/options.hpp>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <optional>

using namespace ef;
using namespace std::chrono_literals;

namespace {

using test::scrape;
using test::value_of;

/// /readyz's status and body.
std::pair<int, nlohmann::json> readyz(const std::string& url) {
  httplib::Client cli(url);
  cli.set_read_timeout(30, 0);
  auto res = cli.Get("/readyz");
  REQUIRE(res);
  return {res->status, nlohmann::json::parse(res->body, nullptr, false)};
}

struct cluster_fixture {
  explicit cluster_fixture(int brokers = 3) : broker(brokers, topics()) {
    kafka::client_health::process().clear();
    cfg.kafka.partitions = 6;
    cfg.kafka.statistics_interval_ms = 300;
    cfg.metrics.sample_interval_ms = 200;
    t = std::make_unique<test::tree>(
      cfg, endpoints{db.dsn(), broker.bootstrap_servers()});
    // An order per partition or so: every relay and member talks to the
    // leaders of its partitions.
    for (int i = 0; i < 12; ++i)
      REQUIRE(
        test::post_json(t->url(), "/orders",
                        test::order_body("kh" + std::to_string(i), 1, 100))
          .first == 201);
    REQUIRE(test::wait_until(
      [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  }

  static std::vector<kafka::embedded_broker::topic_spec> topics() {
    return {{"orders", 6}, {"orders.dlq", 6}};
  }

  std::string fault(const std::string& command) {
    auto answer = broker.run_command(command);
    INFO(answer);
    REQUIRE(answer.rfind("fault ok", 0) == 0);
    return answer;
  }

  test::database db;
  config::settings cfg = test::test_settings();
  kafka::embedded_broker broker;
  std::unique_ptr<test::tree> t;
};

} // namespace

TEST_CASE("a_broker_down_shows_in_the_kafka_series_and_readyz_names_it_"
          "degraded_and_all_down_is_not_ready") {
  cluster_fixture f;
  const std::string broker_2 = R"(kafka_broker_reachable{broker="2"})";
  REQUIRE(test::wait_until([&] {
    auto m = scrape(f.t->url());
    return value_of(m, broker_2) == 1.0 &&
           value_of(
             m, R"(kafka_broker_up{broker="2",client="eventforge-relay"})") ==
             1.0 &&
           value_of(m, "kafka_brokers_down") == 0.0;
  }));
  f.fault("down 2");
  // Broker 2 refuses connections: down for the process, whichever client
  // still needs it (its leaders moved to the others).
  REQUIRE(test::wait_until([&] {
    auto m = scrape(f.t->url());
    return value_of(m, broker_2) == 0.0 &&
           value_of(m, "kafka_brokers_down") == 1.0;
  }));
  // Ready (two brokers serve), degraded, and it says which broker.
  REQUIRE(test::wait_until([&] {
    auto [status, body] = readyz(f.t->url());
    return status == 200 && body["brokers"]["2"] == "down" &&
           body["degraded"].dump().find("broker 2 down") != std::string::npos;
  }));
  auto [s1, b1] = readyz(f.t->url());
  INFO(b1.dump());
  CHECK(b1["ready"] == true);
  CHECK(b1["brokers"]["1"] == "up");
  CHECK(b1["broker"] == "ok");
  // Every broker down: not ready, naming them.
  f.fault("down 1");
  f.fault("down 3");
  REQUIRE(test::wait_until([&] {
    auto [status, body] = readyz(f.t->url());
    return status == 503 && body["broker"].get<std::string>().find(
                              "no broker is reachable") != std::string::npos;
  }));
  auto m = scrape(f.t->url());
  CHECK(value_of(m, "kafka_brokers_down") == 3.0);
  // Back: ready again, nothing degraded by brokers.
  f.fault("up 1");
  f.fault("up 2");
  f.fault("up 3");
  REQUIRE(test::wait_until([&] {
    auto [status, body] = readyz(f.t->url());
    return status == 200 && body["brokers"]["2"] == "up" &&
           body["degraded"].dump().find("broker") == std::string::npos;
  }));
  CHECK(value_of(scrape(f.t->url()), "kafka_brokers_down") == 0.0);
}

TEST_CASE("consumer_lag_is_absent_not_frozen_while_the_coordinator_is_"
          "unreachable_and_its_age_says_how_old") {
  cluster_fixture f;
  const std::string lag = R"(consumer_lag{consumer="billing",partition="0"})";
  const std::string age =
    R"(consumer_lag_sample_age_seconds{consumer="billing"})";
  REQUIRE(test::wait_until([&] {
    auto m = scrape(f.t->url());
    return value_of(m, lag) == 0.0 && value_of(m, age) < 10.0;
  }));
  // Billing's group coordinator on broker 2, then broker 2 down: the lag
  // cannot be read (its committed offsets live with the coordinator).
  f.fault("coordinator eventforge.billing 2");
  f.fault("down 2");
  REQUIRE(test::wait_until(
    [&] {
      auto m = scrape(f.t->url());
      return !value_of(m, lag) && value_of(m, age) >= 5.0;
    },
    60s));
  // Never a frozen 0 while it lasts; then read again.
  f.fault("up 2");
  REQUIRE(test::wait_until(
    [&] {
      auto m = scrape(f.t->url());
      return value_of(m, lag).has_value() && value_of(m, age) < 10.0;
    },
    60s));
}

TEST_CASE("every_line_of_the_json_log_is_json_while_librdkafka_logs_and_"
          "stdout_carries_only_ready_and_stopping") {
  test::database db;
  test::temp_dir dir;
  kafka::embedded_broker broker(3, cluster_fixture::topics());
  // librdkafka's own debug lines (debug=broker,metadata: hundreds) and its
  // errors while a broker is down go through EventForge's logger.
  auto props = dir.path + "/kafka.properties";
  std::ofstream(props) << "debug=broker,metadata\n";
  auto log = dir.path + "/serve.log";
  test::child_process serve(
    test::serve_command(db.dsn(), broker.bootstrap_servers(),
                        {"--log.format=json", "--log.level=info",
                         "--kafka.partitions=6",
                         "--kafka.properties-file=" + props}),
    log);
  auto ready = serve.await_line("ready");
  REQUIRE_FALSE(ready.empty());
  auto url = test::ready_field(ready, "http");
  REQUIRE(
    test::post_json(url, "/orders", test::order_body("json", 1, 100)).first ==
    201);
  REQUIRE(broker.run_command("down 2").rfind("fault ok", 0) == 0);
  REQUIRE(
    test::post_json(url, "/orders", test::order_body("json", 1, 100)).first ==
    201);
  // Until a client reported the broker down in the log, then back.
  REQUIRE(test::wait_until([&] {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    return text.find("Connection refused") != std::string::npos;
  }));
  REQUIRE(broker.run_command("up 2").rfind("fault ok", 0) == 0);
  auto cfg = test::test_settings();
  cfg.kafka.partitions = 6;
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  serve.signal(SIGTERM);
  REQUIRE(serve.wait() == 0);
  // stdout: the two machine-readable lines, nothing else.
  auto out = serve.stdout_lines();
  INFO("stdout:\n"
       << [&] {
            std::string all;
            for (auto& l : out)
              all += l + "\n";
            return all;
          }());
  REQUIRE(out.size() == 2);
  CHECK(out[0].rfind("ready ", 0) == 0);
  CHECK(out[1].rfind("stopping ", 0) == 0);
  // The log (stderr): one JSON object per line.
  std::ifstream in(log);
  int json_lines = 0, kafka_lines = 0;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    INFO(line);
    REQUIRE(j.is_object()); // one JSON object per line, nothing raw
    ++json_lines;
    kafka_lines += j.value("msg", "").rfind("kafka ", 0) == 0;
  }
  CHECK(kafka_lines > 10);
  CHECK(json_lines > kafka_lines);
}

TEST_CASE("status_with_every_broker_down_prints_the_database_part_with_relay_"
          "owners_by_node_and_exits_4") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.node.name = "node-a";
  kafka::embedded_broker broker(1, cluster_fixture::topics());
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  REQUIRE(
    test::post_json(t.url(), "/orders", test::order_body("st", 1, 100)).first ==
    201);
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  auto status = test::eventforge_binary() + " status --database.url='" +
                db.dsn() + "' --kafka.brokers=" + broker.bootstrap_servers();
  auto [ok, all] = test::run_command(status);
  INFO(all);
  CHECK(ok == 0);
  // Relay owners by node name, not backend PID.
  CHECK_THAT(all, Catch::Contains("relay shards: 0=node-a 1=node-a"));
  broker.set_down(true);
  auto [code, out] = test::run_command(status);
  INFO(out);
  CHECK(code == 4);
  CHECK_THAT(out, Catch::Contains("outbox: 0 unsent") &&
                    Catch::Contains("consumer lag: not read (") &&
                    Catch::Contains("dlq: 0 parked"));
  broker.set_down(false);
}

TEST_CASE("a_tls_client_against_a_plaintext_listener_is_named_at_start_with_"
          "the_broker_and_librdkafkas_reason") {
  // The seed printed `ready` after "no assignment after 20000 ms; ready
  // anyway", the cause only in raw librdkafka lines. The warning that comes
  // before the ready line now carries what the clients reported.
  test::database db;
  test::temp_dir dir;
  kafka::embedded_broker broker(1, cluster_fixture::topics());
  auto props = dir.path + "/kafka.properties";
  std::ofstream(props) << "security.protocol=ssl\n"
                       << "enable.ssl.certificate.verification=false\n";
  auto log = dir.path + "/serve.log";
  test::child_process serve(
    test::serve_command(db.dsn(), broker.bootstrap_servers(),
                        {"--kafka.properties-file=" + props}),
    log);
  auto ready = serve.await_line("ready", std::chrono::seconds(90));
  REQUIRE_FALSE(ready.empty());
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  auto at = text.find("no assignment after");
  INFO(text.substr(0, 4000));
  REQUIRE(at != std::string::npos);
  auto line = text.substr(at, text.find('\n', at) - at);
  INFO(line);
  // Which broker, which mechanism, librdkafka's reason.
  CHECK_THAT(line, Catch::Contains("Kafka clients reported") &&
                     Catch::Contains("ssl://") &&
                     Catch::Contains("SSL handshake failed"));
  serve.signal(SIGTERM);
  serve.wait();
}
