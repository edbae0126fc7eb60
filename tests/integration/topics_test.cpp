// `eventforge topics create|check` against the in-process cluster, as far as
// its Admin API answers: it answers Metadata (partitions, replicas), but
// neither CreateTopics nor DescribeConfigs. What the command sends there is
// pinned by tests/unit/topic_admin_test.cpp. Every test reads the broker's
// metadata itself afterwards: the command never changes an existing topic.

#include "kafka/embedded_broker.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <librdkafka/rdkafka.h>

#include <map>

using namespace ef;

namespace {

/// topic -> (partitions, replicas of partition 0), as the broker's metadata
/// says, read with a client of the test's own.
std::map<std::string, std::pair<int, int>>
broker_topics(const std::string& brokers) {
  char err[512];
  auto* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err,
                    sizeof(err));
  auto* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  REQUIRE(rk != nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  REQUIRE(rd_kafka_metadata(rk, 1, nullptr, &md, 10000) ==
          RD_KAFKA_RESP_ERR_NO_ERROR);
  std::map<std::string, std::pair<int, int>> out;
  for (int i = 0; i < md->topic_cnt; ++i) {
    auto& t = md->topics[i];
    out[t.topic] = {t.partition_cnt,
                    t.partition_cnt > 0 ? t.partitions[0].replica_cnt : 0};
  }
  rd_kafka_metadata_destroy(md);
  rd_kafka_destroy(rk);
  return out;
}

/// `eventforge topics ACTION` on `brokers` with `args`; (exit, output).
std::pair<int, std::string> topics(const std::string& action,
                                   const std::string& brokers,
                                   const std::string& args) {
  return test::run_command(test::eventforge_binary() + " topics " + action +
                           " --kafka.brokers=" + brokers +
                           " --timeout-ms=1000 " + args + " 2>&1");
}

} // namespace

TEST_CASE("topics_create_twice_on_existing_topics_says_exists_and_matches_"
          "and_names_the_configs_it_could_not_check") {
  kafka::embedded_broker broker(1, {{"orders", 4}, {"orders.dlq", 4}});
  auto brokers = broker.bootstrap_servers();
  auto before = broker_topics(brokers);
  for (int run = 0; run < 2; ++run) {
    auto [code, out] = topics(
      "create", brokers, "--kafka.partitions=4 --kafka.replication-factor=1");
    INFO("run " << run << ": " << out);
    CHECK(code == 0);
    CHECK_THAT(out, Catch::Contains("orders: exists and matches (4 "
                                    "partitions, replication factor 1); "
                                    "configs not checked: the broker did not "
                                    "answer DescribeConfigs within 1000 ms"));
    CHECK_THAT(out, Catch::Contains("orders.dlq: exists and matches"));
  }
  CHECK(broker_topics(brokers) == before);
  CHECK(before.at("orders") == std::make_pair(4, 1));
}

TEST_CASE("a_topic_with_other_partitions_or_replicas_is_reported_as_"
          "differing_exit_3_and_left_as_it_is") {
  kafka::embedded_broker broker(3, {{"orders", 3}, {"orders.dlq", 8}});
  auto brokers = broker.bootstrap_servers();
  auto [code, out] = topics("create", brokers, "--kafka.partitions=8");
  INFO(out);
  CHECK(code == 3);
  CHECK_THAT(out, Catch::Contains("orders: exists and differs: 3 partitions, "
                                  "wanted 8 (left as it is)"));
  CHECK_THAT(out, Catch::Contains("orders.dlq: exists and matches (8 "
                                  "partitions, replication factor 3)"));
  auto [rf_code, rf_out] = topics("check", brokers,
                                  "--kafka.partitions=8 --json "
                                  "--kafka.replication-factor=2");
  INFO(rf_out);
  CHECK(rf_code == 3);
  CHECK_THAT(rf_out, Catch::Contains("\"replication factor 3, wanted 2\""));
  CHECK_THAT(rf_out, Catch::Contains("\"exit_code\":3"));
  auto after = broker_topics(brokers);
  CHECK(after.at("orders") == std::make_pair(3, 3));
  CHECK(after.at("orders.dlq") == std::make_pair(8, 3));
}

TEST_CASE("a_missing_topic_is_reported_missing_by_check_and_not_created_"
          "when_the_broker_does_not_answer_create_topics") {
  kafka::embedded_broker broker(1, {{"orders", 6}});
  auto brokers = broker.bootstrap_servers();
  auto [check_code, check_out] =
    topics("check", brokers, "--kafka.replication-factor=1");
  INFO(check_out);
  CHECK(check_code == 3);
  CHECK_THAT(check_out, Catch::Contains("orders: exists and matches"));
  CHECK_THAT(check_out, Catch::Contains("orders.dlq: missing"));
  // The in-process broker answers no CreateTopics: said, not pretended.
  auto [code, out] = topics("create", brokers, "--kafka.replication-factor=1");
  INFO(out);
  CHECK(code == 4);
  CHECK_THAT(out, Catch::Contains("orders.dlq: not created: the broker did "
                                  "not answer CreateTopics within 1000 ms"));
  auto after = broker_topics(brokers);
  CHECK(after.count("orders.dlq") == 0);
  CHECK(after.at("orders") == std::make_pair(6, 1));
}

TEST_CASE("topics_on_an_unreachable_cluster_exits_4_naming_it_and_without_"
          "brokers_exits_2") {
  kafka::embedded_broker broker(1, {{"orders", 6}, {"orders.dlq", 6}});
  auto brokers = broker.bootstrap_servers();
  broker.set_down(true);
  auto [code, out] = topics("create", brokers, "");
  INFO(out);
  CHECK(code == 4);
  CHECK_THAT(out, Catch::Contains("kafka unreachable: cannot read the "
                                  "metadata of the cluster at " +
                                  brokers));
  broker.set_down(false);
  CHECK(broker_topics(brokers).at("orders").first == 6);

  auto [no_brokers, why] =
    test::run_command(test::eventforge_binary() + " topics create 2>&1");
  CHECK(no_brokers == 2);
  CHECK_THAT(why, Catch::Contains("topics needs --kafka.brokers"));
  test::temp_dir dir;
  // migrate --kafka refuses before it starts or changes a database.
  auto [migrate, migrate_out] = test::run_command(
    test::eventforge_binary() +
    " migrate --kafka --database.data-dir=" + dir.path + "/pg 2>&1");
  INFO(migrate_out);
  CHECK(migrate == 2);
  CHECK_THAT(migrate_out, Catch::Contains("topics needs --kafka.brokers"));
  CHECK(test::run_command("test -e " + dir.path + "/pg").first != 0);
}
