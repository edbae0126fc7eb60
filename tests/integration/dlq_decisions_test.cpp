// An operator's decision touches exactly what it names (docs/dlq.md,
// "Decisions on an order's entries"), on real PostgreSQL, the Kafka protocol
// and the real tree: a decision on an entry behind its order's head changes
// that entry only; a replay never overtakes the head; a group command never
// resolves a head it does not contain; and whatever arrives again, a decided
// entry stays decided.

#include "kafka/offsets.hpp"
#include "kafka/outbox_producer.hpp"
#include "messages/ids.hpp"
#include "tests/integration/dlq_fixture.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <nlohmann/json.hpp>

using namespace ef;
using ef::test::dlq_fixture;
using namespace std::chrono_literals;

namespace {

/// One order whose three events both consumers parked: its creation failed
/// for good (a check violation, the head), its cancellation and a second
/// cancellation (an outbox row added as a later command would add it) wait
/// behind it (`parked_behind`).
struct three_parked {
  explicit three_parked(dlq_fixture& fx, const std::string& customer)
      : f(fx), trigger("fail_" + customer) {
    f.add_failing_trigger(customer, "23514", 1000000);
    order = f.place(customer);
    REQUIRE(
      test::post_json(f.t->url(), "/orders/" + order + "/cancel", "").first ==
      202);
    f.db.exec("INSERT INTO outbox (event_id, order_id, shard, event_type, "
              "payload, headers) SELECT gen_random_uuid(), order_id, shard, "
              "event_type, payload, headers FROM outbox WHERE order_id = '" +
              order + "' AND event_type = 'OrderCancelled'");
    f.settle();
    REQUIRE(test::wait_until([&] {
      return f.count("SELECT count(*) FROM dlq_events WHERE order_key = '" +
                     order + "' AND status = 'parked'") == 6;
    }));
    for (auto& [consumer, ids] : entries) {
      auto rows = f.db.scalar<std::string>(
        "SELECT string_agg(id::text, ',' ORDER BY source_offset) FROM "
        "dlq_events WHERE consumer = '" +
        consumer + "' AND order_key = '" + order + "'");
      for (size_t at = 0; at < rows.size();) {
        auto comma = rows.find(',', at);
        ids.push_back(std::stoll(rows.substr(at, comma - at)));
        at = comma == std::string::npos ? rows.size() : comma + 1;
      }
      REQUIRE(ids.size() == 3);
    }
    REQUIRE(status(billing(0)) == "parked");
    REQUIRE(f.db.scalar<std::string>(
              "SELECT error_class FROM dlq_events WHERE id = " +
              std::to_string(billing(0))) == "db_permanent");
    for (int i : {1, 2})
      REQUIRE(f.db.scalar<std::string>(
                "SELECT error_class FROM dlq_events WHERE id = " +
                std::to_string(billing(i))) == "parked_behind");
  }

  std::int64_t billing(int i) { return entries["billing"].at(i); }
  std::string id(int i) { return std::to_string(billing(i)); }

  std::string status(std::int64_t entry) {
    return f.db.scalar<std::string>(
      "SELECT status FROM dlq_events WHERE id = " + std::to_string(entry));
  }

  /// Billing's three statuses, head first.
  std::string billing_statuses() {
    return status(billing(0)) + "," + status(billing(1)) + "," +
           status(billing(2));
  }

  int fulfillment_parked() {
    return f.count("SELECT count(*) FROM dlq_events WHERE consumer = "
                   "'fulfillment' AND order_key = '" +
                   order + "' AND status = 'parked'");
  }

  /// DLQ replays (and releases) published to the source topic so far.
  int replays_published() {
    int n = 0;
    for (auto& r : kafka::read_all(f.brokers(), f.cfg.kafka.topic, 1))
      n += !test::header(r, "dlq.replay_of").empty();
    return n;
  }

  int effects_of(std::int64_t entry) {
    return f.count("SELECT count(*) FROM business_effects b JOIN dlq_events d "
                   "ON d.event_id = b.event_id::text AND d.consumer = "
                   "b.consumer WHERE d.id = " +
                   std::to_string(entry));
  }

  dlq_fixture& f;
  std::string trigger;
  std::string order;
  std::map<std::string, std::vector<std::int64_t>> entries{{"billing", {}},
                                                           {"fulfillment", {}}};
};

std::string result_of(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("result"))
    return j["result"].get<std::string>();
  if (j.is_object() && j.contains("error"))
    return j["error"].get<std::string>();
  return body;
}

} // namespace

TEST_CASE("a_decision_on_an_entry_behind_its_order_head_changes_that_entry_"
          "only_and_the_head_releases_in_order") {
  dlq_fixture f(1);
  three_parked x(f, "behind");
  // Discard the third: it alone changes. The head is not replayed, nothing
  // is released, nothing is published.
  auto [ds, db] = f.admin("POST", "/admin/dlq/" + x.id(2) + "/discard");
  INFO(db);
  REQUIRE(ds == 200);
  CHECK(x.billing_statuses() == "parked,parked,discarded");
  CHECK(f.count("SELECT count(*) FROM dlq_actions") == 1);
  CHECK(x.replays_published() == 0);
  CHECK_THAT(result_of(db), Catch::Contains("entry " + x.id(0)) &&
                              Catch::Contains("nothing else changed"));
  // Replay the second: refused, it waits behind the head; nothing changes.
  auto [rs, rb] = f.admin("POST", "/admin/dlq/" + x.id(1) + "/replay");
  INFO(rb);
  CHECK(rs == 409);
  CHECK_THAT(result_of(rb), Catch::Contains("waits behind") &&
                              Catch::Contains("entry " + x.id(0)));
  CHECK(x.billing_statuses() == "parked,parked,discarded");
  CHECK(f.count("SELECT count(*) FROM dlq_actions") == 1);
  CHECK(x.replays_published() == 0);
  // Discard the head: the second is released and applied (a cancel whose
  // creation was never applied refunds nothing); the third stays discarded.
  f.db.exec("DROP TRIGGER " + x.trigger + " ON business_effects");
  auto [hs, hb] = f.admin("POST", "/admin/dlq/" + x.id(0) + "/discard");
  INFO(hb);
  REQUIRE(hs == 200);
  REQUIRE(test::wait_until([&] { return x.effects_of(x.billing(1)) == 1; }));
  f.settle();
  CHECK(x.billing_statuses() == "discarded,replayed,discarded");
  CHECK(x.effects_of(x.billing(0)) == 0);
  CHECK(x.effects_of(x.billing(2)) == 0);
  CHECK(f.db.scalar<std::string>(
          "SELECT kind FROM business_effects b JOIN dlq_events d ON "
          "d.event_id = b.event_id::text AND d.consumer = b.consumer WHERE "
          "d.id = " +
          x.id(1)) == "refund_skipped");
  CHECK(f.count("SELECT count(*) FROM dlq_actions WHERE action = 'release' "
                "AND dlq_id = " +
                x.id(1)) == 1);
  // Fulfillment's entries of the same order: untouched throughout.
  CHECK(x.fulfillment_parked() == 3);
}

TEST_CASE("a_group_command_never_resolves_a_head_the_group_does_not_contain") {
  dlq_fixture f(1);
  three_parked x(f, "grouped");
  f.db.exec("DROP TRIGGER " + x.trigger + " ON business_effects");
  auto behind = f.db.scalar<std::string>(
    "SELECT DISTINCT fingerprint FROM dlq_events WHERE error_class = "
    "'parked_behind'");
  auto base = test::eventforge_binary() + " dlq --database.url='" + f.db.dsn() +
              "' --kafka.brokers=" + f.brokers();
  auto [dc, dry] =
    test::run_command(base + " replay --dry-run --group '" + behind + "'");
  INFO(dry);
  CHECK_THAT(dry, Catch::Contains("waits behind entry " + x.id(0)));
  auto [rc, out] = test::run_command(base + " replay --group '" + behind + "'");
  INFO(out);
  // Every entry of the group waits behind a head the group does not hold:
  // nothing is replayed, and the command says so and fails.
  CHECK(rc == 1);
  CHECK_THAT(out, Catch::Contains("waits behind entry " + x.id(0)));
  CHECK(x.billing_statuses() == "parked,parked,parked");
  CHECK(x.fulfillment_parked() == 3);
  CHECK(f.count("SELECT count(*) FROM dlq_actions") == 0);
  CHECK(x.replays_published() == 0);
}

TEST_CASE("a_discarded_event_delivered_again_behind_a_parked_head_stays_"
          "discarded_and_counts_as_a_suppressed_duplicate") {
  dlq_fixture f(1);
  three_parked x(f, "again");
  auto [ds, db] = f.admin("POST", "/admin/dlq/" + x.id(1) + "/discard");
  INFO(db);
  REQUIRE(ds == 200);
  REQUIRE(x.billing_statuses() == "parked,discarded,parked");
  // Every record of the order delivered once more (a repair or a group
  // reset would), after a restart: the head fails again and is parked as it
  // was; the discarded event stays discarded and nothing new is parked.
  f.restart();
  f.produce_again(f.cfg.kafka.topic);
  f.settle();
  CHECK(x.billing_statuses() == "parked,discarded,parked");
  CHECK(f.count("SELECT count(*) FROM dlq_events") == 6);
  CHECK(test::counters(f.t->system(), f.t->root())
          [R"(consumer_duplicates_suppressed_total{consumer="billing"})"] >= 1);
  // A second discard names the real state.
  auto [again, ab] = f.admin("POST", "/admin/dlq/" + x.id(1) + "/discard");
  CHECK(again == 409);
  CHECK_THAT(result_of(ab), Catch::Contains("discarded"));
  CHECK_THAT(result_of(ab), !Catch::Contains("applied event"));
}

TEST_CASE("a_discarded_undecodable_record_published_again_stays_discarded_and_"
          "blocks_nothing") {
  dlq_fixture f(1);
  auto order = f.place("junk-key");
  f.settle();
  // A record under the order's key that no consumer can read.
  f.produce_raw(order, "{not json");
  f.settle();
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM dlq_events WHERE status = "
                   "'parked'") == 2;
  }));
  for (auto consumer : {"billing", "fulfillment"}) {
    auto id = f.db.scalar<long>("SELECT id FROM dlq_events WHERE consumer = '" +
                                std::string(consumer) + "'");
    auto [s, b] =
      f.admin("POST", "/admin/dlq/" + std::to_string(id) + "/discard");
    INFO(b);
    REQUIRE(s == 200);
  }
  // The same bytes once more (at new offsets), and a restart: the entries
  // stay discarded, no new one appears, and the key is not blocked.
  f.produce_again(f.cfg.kafka.topic);
  f.restart();
  f.settle();
  CHECK(f.count("SELECT count(*) FROM dlq_events") == 2);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE status = "
                "'discarded'") == 2);
  REQUIRE(
    test::post_json(f.t->url(), "/orders/" + order + "/cancel", "").first ==
    202);
  f.settle();
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                order + "'") == 4);
  CHECK(f.count("SELECT count(*) FROM dlq_events") == 2);
}

TEST_CASE("a_replay_no_broker_ever_acknowledges_is_parked_again_after_its_"
          "give_up_and_can_be_discarded") {
  dlq_fixture f(1, {}, 1, 3000);
  f.cfg.dlq.replay_give_up_ms = 1000;
  f.restart();
  f.add_failing_trigger("stuck", "23514", 1000000);
  auto order = f.place("stuck");
  f.settle();
  auto id = std::to_string(f.db.scalar<long>(
    "SELECT id FROM dlq_events WHERE consumer = 'billing' AND order_key = '" +
    order + "'"));
  // From now on every produce request is refused, as for a topic an ACL
  // closed: no replay of it can ever be acknowledged.
  std::vector<rd_kafka_resp_err_t> refusals(
    1000, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  rd_kafka_mock_push_request_errors_array(f.broker->mock_cluster(),
                                          0 /* Produce */, refusals.size(),
                                          refusals.data());
  auto [s, b] = f.admin("POST", "/admin/dlq/" + id + "/replay");
  INFO(b);
  REQUIRE(s == 200);
  CHECK(test::json_field(b, "status") == "replaying");
  CHECK_THAT(
    f.db.scalar<std::string>(
      "SELECT coalesce(replay_error, '') FROM dlq_events WHERE id = " + id),
    Catch::Contains("authoriz"));
  // The gauge names the stuck replay while it is stuck.
  httplib::Client cli(f.t->url());
  REQUIRE(test::wait_until([&] {
    auto m = cli.Get("/metrics");
    return m &&
           m->body.find("\ndlq_oldest_unacknowledged_replay_age_"
                        "seconds 0\n") == std::string::npos &&
           m->body.find("\ndlq_oldest_unacknowledged_replay_age_seconds ") !=
             std::string::npos;
  }));
  // After dlq.replay-give-up-ms the DLQ handler's sweep parks it again,
  // with its last error, records why, and counts it.
  auto given_up = [&] {
    return test::counters(
      f.t->system(),
      f.t->root())[R"(dlq_replays_given_up_total{consumer="billing"})"];
  };
  // The counter moves after the give-up's commit: wait for both.
  REQUIRE(test::wait_until(
    [&] {
      return f.db.scalar<std::string>(
               "SELECT status FROM dlq_events WHERE id = " + id) == "parked" &&
             given_up() >= 1;
    },
    30s));
  CHECK(f.count("SELECT count(*) FROM dlq_actions WHERE action = 'give_up' "
                "AND dlq_id = " +
                id + " AND outcome LIKE '%authoriz%'") == 1);
  CHECK(test::counters(
          f.t->system(),
          f.t->root())[R"(dlq_replays_given_up_total{consumer="billing"})"] ==
        1);
  // Replayed once more and still refused by the broker, it can be
  // discarded at once: the decision holds, nothing is ever applied.
  auto [again, ab] = f.admin("POST", "/admin/dlq/" + id + "/replay");
  INFO(ab);
  CHECK(again == 200);
  auto [ds, db] = f.admin("POST", "/admin/dlq/" + id + "/discard");
  INFO(db);
  CHECK(ds == 200);
  CHECK(f.db.scalar<std::string>("SELECT status FROM dlq_events WHERE id = " +
                                 id) == "discarded");
  rd_kafka_mock_clear_request_errors(f.broker->mock_cluster(), 0);
  f.db.exec("DROP TRIGGER fail_stuck ON business_effects");
  f.settle();
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE consumer = "
                "'billing' AND order_id = '" +
                order + "'") == 0);
  CHECK(f.db.scalar<std::string>(
          "SELECT outcome FROM processed_events p JOIN dlq_events d ON "
          "p.event_id::text = d.event_id AND p.consumer = d.consumer WHERE "
          "d.id = " +
          id) == "discarded");
}

TEST_CASE("a_dlq_record_naming_another_source_topic_is_replayed_to_the_topic_"
          "its_dlq_belongs_to") {
  dlq_fixture f(1);
  auto order = f.place("foreign-topic");
  f.settle();
  // A record written straight to the DLQ topic, its header naming a topic
  // that does not exist.
  kafka::outbox_producer p(f.brokers(), config::dlq_topic_of(f.cfg), 10000,
                           "foreign");
  REQUIRE(p.publish_raw(order, "{not json",
                        {{"dlq.consumer", "billing"},
                         {"dlq.source.topic", "nowhere"},
                         {"dlq.error.class", "undecodable"},
                         {"dlq.error.message", "made up"}})
            .persisted);
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM dlq_events WHERE consumer = "
                   "'billing'") == 1;
  }));
  CHECK(f.db.scalar<std::string>("SELECT source_topic FROM dlq_events") ==
        f.cfg.kafka.topic);
}
