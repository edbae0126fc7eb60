// The topics `eventforge topics create` asks for, and how it compares them
// with what a broker describes. The in-process broker answers neither
// CreateTopics nor DescribeConfigs, so the request and the comparison are
// pinned here, without a broker.

#include "kafka/topic_admin.hpp"
#include <eventforge/config/options.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace ef;
using kafka::observed_topic;
using kafka::topic_report;
using kafka::topic_state;
using kafka::topics_outcome;

namespace {

/// A topic as a broker would describe `want`, configs included.
observed_topic as_described(const kafka::topic_spec& want) {
  observed_topic o;
  o.exists = true;
  o.partitions = want.partitions;
  o.replication_factor = want.replication_factor;
  o.configs = want.configs;
  (*o.configs)["cleanup.policy"] = "delete"; // what we do not set is ignored
  return o;
}

topic_report report(topic_state state) {
  topic_report r;
  r.name = "orders";
  r.state = state;
  return r;
}

} // namespace

TEST_CASE("the_create_request_carries_both_topics_with_partitions_"
          "replication_factor_and_configs_from_the_settings") {
  config::settings cfg;
  auto specs = kafka::wanted_topics(cfg);
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].name == "orders");
  CHECK(specs[1].name == "orders.dlq");
  for (auto& s : specs) {
    INFO(s.name);
    CHECK(s.partitions == 6);
    CHECK(s.replication_factor == 3);
    CHECK(s.configs ==
          std::map<std::string, std::string>{{"min.insync.replicas", "2"},
                                             {"retention.bytes", "-1"},
                                             {"retention.ms", "604800000"}});
  }
}

TEST_CASE("the_create_request_follows_every_topic_key") {
  auto built = config::build_settings({{"kafka.topic", "shop"},
                                       {"kafka.dlq-topic", "shop-parked"},
                                       {"kafka.partitions", "12"},
                                       {"kafka.replication-factor", "1"},
                                       {"kafka.retention-bytes", "1048576"},
                                       {"kafka.retention-ms", "3600000"}});
  REQUIRE(built.ok());
  auto specs = kafka::wanted_topics(built.value);
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].name == "shop");
  CHECK(specs[1].name == "shop-parked");
  for (auto& s : specs) {
    INFO(s.name);
    CHECK(s.partitions == 12);
    CHECK(s.replication_factor == 1);
    // One replica: an acks=all write can wait for no more than that one.
    CHECK(s.configs.at("min.insync.replicas") == "1");
    CHECK(s.configs.at("retention.bytes") == "1048576");
    CHECK(s.configs.at("retention.ms") == "3600000");
  }
  auto explicit_isr = config::build_settings(
    {{"kafka.replication-factor", "5"}, {"kafka.min-insync-replicas", "3"}});
  REQUIRE(explicit_isr.ok());
  CHECK(kafka::wanted_topics(explicit_isr.value)[0].configs.at(
          "min.insync.replicas") == "3");
}

TEST_CASE("min_insync_replicas_above_the_replication_factor_is_refused_"
          "naming_both_keys") {
  auto built = config::build_settings(
    {{"kafka.replication-factor", "2"}, {"kafka.min-insync-replicas", "3"}});
  REQUIRE_FALSE(built.ok());
  CHECK_THAT(built.error, Catch::Contains("kafka.min-insync-replicas") &&
                            Catch::Contains("kafka.replication-factor (2)"));
  CHECK_FALSE(config::build_settings({{"kafka.replication-factor", "0"}}).ok());
}

TEST_CASE("a_topic_as_wanted_has_no_differences_and_each_difference_is_named") {
  auto want = kafka::wanted_topics(config::settings{})[0];
  CHECK(kafka::differences(want, as_described(want)).empty());

  auto seen = as_described(want);
  seen.partitions = 3;
  seen.replication_factor = 1;
  (*seen.configs)["retention.bytes"] = "5242880";
  seen.configs->erase("retention.ms");
  CHECK(kafka::differences(want, seen) ==
        std::vector<std::string>{"3 partitions, wanted 6",
                                 "replication factor 1, wanted 3",
                                 "retention.bytes=5242880, wanted -1",
                                 "retention.ms not described, wanted "
                                 "604800000"});
  CHECK(kafka::differences(want, observed_topic{}) ==
        std::vector<std::string>{"missing"});
}

TEST_CASE("configs_a_broker_did_not_describe_are_not_compared") {
  auto want = kafka::wanted_topics(config::settings{})[0];
  auto seen = as_described(want);
  seen.configs.reset();
  seen.configs_unchecked = "the broker did not answer DescribeConfigs";
  CHECK(kafka::differences(want, seen).empty());
}

TEST_CASE("the_exit_status_is_4_unreachable_then_1_refused_then_3_differs") {
  topics_outcome ok;
  ok.topics = {report(topic_state::created), report(topic_state::matches)};
  CHECK(kafka::exit_code(ok) == 0);
  auto with = [&](topic_state s) {
    auto o = ok;
    o.topics.push_back(report(s));
    return o;
  };
  CHECK(kafka::exit_code(with(topic_state::differs)) == 3);
  CHECK(kafka::exit_code(with(topic_state::missing)) == 3);
  auto refused = with(topic_state::refused);
  CHECK(kafka::exit_code(refused) == 1);
  refused.topics.push_back(report(topic_state::differs));
  CHECK(kafka::exit_code(refused) == 1);
  refused.topics.push_back(report(topic_state::unanswered));
  CHECK(kafka::exit_code(refused) == 4);
  topics_outcome down;
  down.unreachable = "cannot read the metadata of the cluster at b:9092";
  CHECK(kafka::exit_code(down) == 4);
}

TEST_CASE("each_topic_gets_one_line_saying_what_was_done_and_what_was_not_"
          "checked") {
  topics_outcome o;
  auto created = report(topic_state::created);
  created.detail = "6 partitions, replication factor 3";
  auto differs = report(topic_state::differs);
  differs.name = "orders.dlq";
  differs.differences = {"3 partitions, wanted 8"};
  differs.configs_unchecked = "the broker did not answer DescribeConfigs";
  auto unanswered = report(topic_state::unanswered);
  unanswered.detail = "the broker did not answer CreateTopics within 10 ms";
  o.topics = {created, differs, unanswered};
  CHECK(kafka::to_text(o) ==
        "orders: created (6 partitions, replication factor 3)\n"
        "orders.dlq: exists and differs: 3 partitions, wanted 8 (left as it "
        "is); configs not checked: the broker did not answer "
        "DescribeConfigs\n"
        "orders: not created: the broker did not answer CreateTopics within "
        "10 ms\n");
  auto doc = nlohmann::json::parse(kafka::to_json(o));
  CHECK(doc["exit_code"] == 4);
  CHECK(doc["ok"] == false);
  CHECK(doc["topics"][1]["state"] == "differs");
  CHECK(doc["topics"][1]["differences"][0] == "3 partitions, wanted 8");
  topics_outcome down;
  down.unreachable = "cannot read the metadata of the cluster at b:9092";
  CHECK(kafka::to_text(down) == "kafka unreachable: cannot read the metadata "
                                "of the cluster at b:9092\n");
}
