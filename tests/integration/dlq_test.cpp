// Retries, the dead-letter queue and ID-preserving replay, on real
// PostgreSQL and the Kafka protocol. One partition, so order is observable.

#include "kafka/event_record.hpp"
#include "kafka/offsets.hpp"
#include "kafka/outbox_producer.hpp"
#include "messages/ids.hpp"
#include "tests/integration/dlq_fixture.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/config/options.hpp>
#include <eventforge/embedded/verifier.hpp>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <librdkafka/rdkafkacpp.h>
#include <nlohmann/json.hpp>

using namespace ef;
using ef::test::dlq_fixture;
using ef::test::header;
using ef::test::without_ages;

namespace {

/// An entry without an event ID is named by its record's bytes: "bytes:"
/// and 128 bits of a SHA-256 over the key's length, the key and the value.
const std::string named_by_bytes =
  "event_id = 'bytes:' || left(encode(sha256(int4send(length(key)) || key "
  "|| value), 'hex'), 32)";

} // namespace
using namespace std::chrono_literals;

TEST_CASE("malformed_record_is_parked_at_once_with_all_headers_and_the_"
          "partition_goes_on_in_order") {
  dlq_fixture f;
  auto key = new_uuid_v7();
  f.produce_raw(key, "{not json");
  auto good = f.place("after-poison");
  f.settle();
  // Parked by both consumers, permanent: one attempt, no retries.
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE " + named_by_bytes +
                " AND error_class = 'undecodable' AND attempts = 1 AND "
                "status = 'parked'") == 2);
  // The record behind it was applied, once per consumer.
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                good + "'") == 2);
  auto dlq = kafka::read_all(f.brokers(), config::dlq_topic_of(f.cfg), 1);
  REQUIRE(dlq.size() == 2);
  for (auto& r : dlq) {
    CHECK(r.key == key);
    CHECK(r.value == "{not json");
    CHECK(header(r, "dlq.source.topic") == f.cfg.kafka.topic);
    CHECK(header(r, "dlq.source.partition") == "0");
    CHECK(header(r, "dlq.source.offset") == "0");
    CHECK(header(r, "dlq.error.class") == "undecodable");
    CHECK_FALSE(header(r, "dlq.error.message").empty());
    CHECK(header(r, "dlq.attempts") == "1");
    CHECK_FALSE(header(r, "dlq.first_failure").empty());
    CHECK_FALSE(header(r, "dlq.last_failure").empty());
    CHECK((header(r, "dlq.consumer") == "billing" ||
           header(r, "dlq.consumer") == "fulfillment"));
  }
}

TEST_CASE("an_event_whose_payload_schema_version_is_newer_than_known_is_"
          "parked_naming_the_version_and_applies_nothing") {
  dlq_fixture f;
  auto order = f.place("versioned");
  f.settle();
  // A cancellation from a newer EventForge: same order, a payload version
  // this one does not know.
  order_event ev;
  ev.event_id = new_uuid_v7();
  ev.event_type = order_cancelled_type;
  ev.order_id = order;
  ev.occurred_at = "2026-12-05T00:00:00Z";
  ev.payload = nlohmann::json{
    {"schema_version", payload_schema_version + 1},
    {"order_id", order},
    {"customer_id", "versioned"},
    {"total_cents",
     1000}}.dump();
  f.produce_raw(order, kafka::encode_value(ev));
  auto after = f.place("after-versioned");
  f.settle();
  // Parked by both consumers at the first attempt, naming the version.
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE event_id = '" +
                ev.event_id +
                "' AND error_class = 'db_permanent' AND attempts = 1 AND "
                "status = 'parked' AND error_message LIKE "
                "'%schema_version 2%'") == 2);
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE event_id = '" +
                ev.event_id + "'") == 0);
  CHECK(f.count("SELECT count(*) FROM orders WHERE id = '" + order +
                "' AND status <> 'cancelled'") == 1);
  // The partition went on: the next order was applied by both.
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                after + "'") == 2);
}

TEST_CASE("transient_failures_are_retried_inline_and_exhaustion_parks_after_"
          "exactly_the_budget") {
  dlq_fixture f(3);
  // Fails twice in all (under the budget of 3 per consumer): retried, applied.
  f.add_failing_trigger("wobbly", "40001", 2);
  // Always fails with a serialization failure: parked after 3 attempts.
  f.add_failing_trigger("flaky", "40001", 1000000);
  auto wobbly = f.place("wobbly");
  auto flaky = f.place("flaky");
  auto fine = f.place("fine");
  f.settle();
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                wobbly + "'") == 2);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE order_key = '" + wobbly +
                "'") == 0);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE order_key = '" + flaky +
                "' AND attempts = 3 AND error_class = 'db_transient'") == 2);
  CHECK(f.count("SELECT count(*) FROM processed_events p JOIN outbox o USING "
                "(event_id) WHERE o.order_id = '" +
                flaky + "'") == 0);
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                fine + "'") == 2);

  // Fix the fault, replay both entries: one effect each, same event ID.
  f.db.exec("DROP TRIGGER fail_flaky ON business_effects");
  auto event = f.db.scalar<std::string>(
    "SELECT event_id::text FROM outbox WHERE order_id = '" + flaky + "'");
  for (int round = 0; round < 2; ++round)
    for (auto id : {f.db.scalar<int>("SELECT min(id) FROM dlq_events"),
                    f.db.scalar<int>("SELECT max(id) FROM dlq_events")}) {
      auto [s, b] =
        f.admin("POST", "/admin/dlq/" + std::to_string(id) + "/replay");
      INFO(b);
      // The second replay of an entry is refused and changes nothing: it
      // would count on a mark that retention may have deleted.
      CHECK(s == (round == 0 ? 200 : 409));
      if (round == 1)
        CHECK(b.find("was replayed already") != std::string::npos);
    }
  f.settle();
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE event_id = '" +
                event + "'") == 2);
  CHECK(f.count("SELECT count(*) FROM processed_events WHERE event_id = '" +
                event + "'") == 2);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE status = 'replayed'") ==
        2);
  CHECK(f.count("SELECT count(*) FROM dlq_actions WHERE action = 'replay' AND "
                "actor = 'token:ops' AND outcome = 'published'") == 2);
  auto v = app::verify(f.cfg, f.db.dsn(), f.brokers());
  INFO(app::to_text(v));
  CHECK(v.ok());
}

TEST_CASE("database_backend_killed_during_processing_is_retried_without_a_"
          "dlq_entry") {
  dlq_fixture f(5);
  // Hold the handler inside its transaction long enough to kill it.
  f.db.exec("CREATE TABLE hold (on_ boolean); INSERT INTO hold VALUES (true);"
            "CREATE FUNCTION hold_effects() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN IF (SELECT on_ FROM hold) THEN PERFORM pg_sleep(0.3);"
            " END IF; RETURN NEW; END $$; CREATE TRIGGER hold_effects BEFORE "
            "INSERT ON business_effects FOR EACH ROW EXECUTE FUNCTION "
            "hold_effects()");
  auto order = f.place("victim");
  int killed = 0;
  REQUIRE(test::wait_until([&] {
    killed += f.db.scalar<int>(
      "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
      "pid <> pg_backend_pid() AND wait_event = 'PgSleep'");
    return killed >= 2;
  }));
  f.db.exec("UPDATE hold SET on_ = false");
  f.settle();
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                order + "'") == 2);
  CHECK(f.count("SELECT count(*) FROM dlq_events") == 0);
  CHECK(test::counters(
          f.t->system(),
          f.t->root())[R"(consumer_retries_total{consumer="billing"})"] +
          test::counters(
            f.t->system(),
            f.t->root())[R"(consumer_retries_total{consumer="fulfillment"})"] >=
        2);
}

TEST_CASE("crash_between_dlq_ack_and_offset_commit_leaves_one_dlq_entry") {
  dlq_fixture f(3, {"dlq.after_dlq_ack_before_offset"});
  f.produce_raw(new_uuid_v7(), "not an event");
  f.settle();
  // Parked twice on the topic (before and after the crash), stored once.
  CHECK(kafka::read_all(f.brokers(), config::dlq_topic_of(f.cfg), 1).size() ==
        4);
  REQUIRE(test::wait_until(
    [&] { return f.count("SELECT count(*) FROM dlq_events") == 2; }));
  CHECK(f.count(
          "SELECT count(DISTINCT (consumer, event_id)) FROM dlq_events") == 2);
  CHECK(test::counters(f.t->system(), f.t->root())
          [R"(chaos_crashes_total{point="dlq.after_dlq_ack_before_offset"})"] ==
        2);
}

TEST_CASE("later_events_of_a_parked_order_wait_behind_it_and_replay_applies_"
          "them_in_order_exactly_once") {
  dlq_fixture f(3);
  // X's creation can never pass (a permanent check violation) until fixed.
  f.add_failing_trigger("x", "23514", 1000000);
  auto x = f.place("x");
  auto [cs, cb] = test::post_json(f.t->url(), "/orders/" + x + "/cancel", "");
  REQUIRE(cs == 202);
  auto y = f.place("y");
  f.settle();
  // Y flowed; X's cancel is parked behind X's creation, per consumer.
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" + y +
                "'") == 2);
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" + x +
                "'") == 0);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE order_key = '" + x +
                "' AND error_class = 'db_permanent' AND attempts = 1") == 2);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE order_key = '" + x +
                "' AND error_class = 'parked_behind'") == 2);
  f.db.exec("DROP TRIGGER fail_x ON business_effects");
  // Replay only the heads (the creations); the cancels follow by release.
  for (auto c : {"billing", "fulfillment"}) {
    auto head = f.db.scalar<int>(
      "SELECT id FROM dlq_events WHERE consumer = '" + std::string(c) +
      "' AND order_key = '" + x + "' AND error_class = 'db_permanent'");
    auto [s, b] =
      f.admin("POST", "/admin/dlq/" + std::to_string(head) + "/replay");
    INFO(b);
    REQUIRE(s == 200);
  }
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                   x + "'") == 4;
  }));
  f.settle();
  for (auto c : {"billing", "fulfillment"})
    CHECK(f.db.scalar<std::string>(
            "SELECT string_agg(o.event_type, ',' ORDER BY b.id) FROM "
            "business_effects b JOIN outbox o USING (event_id) WHERE "
            "b.order_id = '" +
            x + "' AND b.consumer = '" + c + "'") ==
          "OrderCreated,OrderCancelled");
  CHECK(f.db.scalar<std::int64_t>(
          "SELECT balance_cents FROM accounts WHERE customer_id = 'x'") == 0);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE status = 'replayed'") ==
        4);
  // Each consumer released its parked cancel (a replay seen by the other
  // consumer may also release that consumer's own copy of the head).
  CHECK(f.count("SELECT count(*) FROM dlq_actions WHERE action = 'release'") >=
        2);
  auto v = app::verify(f.cfg, f.db.dsn(), f.brokers());
  INFO(app::to_text(v));
  CHECK(v.ok());
}

TEST_CASE("discarding_a_parked_head_applies_nothing_for_it_and_releases_the_"
          "order") {
  dlq_fixture f(3);
  f.add_failing_trigger("z", "23514", 1000000);
  auto z = f.place("z");
  REQUIRE(test::post_json(f.t->url(), "/orders/" + z + "/cancel", "").first ==
          202);
  f.settle();
  f.db.exec("DROP TRIGGER fail_z ON business_effects");
  auto head = f.db.scalar<int>("SELECT id FROM dlq_events WHERE consumer = "
                               "'billing' AND error_class = 'db_permanent'");
  auto [s, b] =
    f.admin("POST", "/admin/dlq/" + std::to_string(head) + "/discard");
  INFO(b);
  REQUIRE(s == 200);
  // The cancel behind it is released and follows the late-event rule: no
  // debit ever happened, so nothing is refunded.
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM business_effects WHERE consumer = "
                   "'billing' AND order_id = '" +
                   z + "'") == 1;
  }));
  CHECK(f.db.scalar<std::string>("SELECT kind FROM business_effects WHERE "
                                 "consumer = 'billing' AND order_id = '" +
                                 z + "'") == "refund_skipped");
  // The discarded creation was never applied by billing, even though the
  // other consumer's replays also travel the topic; fulfillment, which
  // discarded nothing, keeps its own copies parked.
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" + z +
                "' AND kind = 'debit'") == 0);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE consumer = "
                "'fulfillment' AND status = 'parked'") == 2);
  CHECK(f.count("SELECT count(*) FROM dlq_actions WHERE action = 'discard' "
                "AND actor = 'token:ops'") == 1);
}

TEST_CASE("admin_endpoints_refuse_missing_or_wrong_tokens_and_change_"
          "nothing") {
  dlq_fixture f(1);
  f.produce_raw(new_uuid_v7(), "junk");
  f.settle();
  REQUIRE(test::wait_until(
    [&] { return f.count("SELECT count(*) FROM dlq_events") == 2; }));
  auto id = std::to_string(f.db.scalar<int>("SELECT min(id) FROM dlq_events"));
  for (auto path : {std::string("/admin/dlq"), "/admin/dlq/" + id})
    CHECK(f.admin("GET", path, "").first == 401);
  CHECK(f.admin("POST", "/admin/dlq/" + id + "/replay", "").first == 401);
  CHECK(f.admin("POST", "/admin/dlq/" + id + "/replay", "wrong").first == 403);
  CHECK(f.admin("POST", "/admin/dlq/" + id + "/discard", "wrong").first == 403);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE status = 'parked'") ==
        2);
  CHECK(f.count("SELECT count(*) FROM dlq_actions") == 0);
  auto [s, list] = f.admin("GET", "/admin/dlq");
  CHECK(s == 200);
  CHECK(list.find("undecodable") != std::string::npos);
  auto [gs, groups] = f.admin("GET", "/admin/dlq/groups");
  CHECK(gs == 200);
  CHECK(groups.find("\"count\":2") != std::string::npos);
}

TEST_CASE("dlq_command_line_lists_groups_and_replays_a_whole_group") {
  dlq_fixture f(1);
  f.add_failing_trigger("g", "23514", 1000000);
  for (int i = 0; i < 3; ++i)
    f.place("g");
  f.settle();
  REQUIRE(f.count("SELECT count(*) FROM dlq_events") == 6);
  auto base = test::eventforge_binary() + " dlq --database.url='" + f.db.dsn() +
              "' --kafka.brokers=" + f.brokers();
  auto [lc, list] = test::run_command(base + " list");
  INFO(list);
  CHECK(lc == 0);
  // One failure shape, six entries: a single group.
  CHECK(list.find(": 6 parked") != std::string::npos);
  // Listing, showing and status read the database alone: no broker needed.
  // A replay publishes, so it needs one, and without it changes nothing.
  auto db_only =
    test::eventforge_binary() + " dlq --database.url='" + f.db.dsn() + "'";
  auto [nc, no_broker] = test::run_command(db_only + " list");
  CHECK(nc == 0);
  // The same groups, counts and entries; a group's age is read at each
  // listing's own moment, so it may have moved on by a second between them.
  CHECK(without_ages(no_broker) == without_ages(list));
  auto first = f.db.scalar<long>("SELECT min(id) FROM dlq_events");
  auto [sc, shown] =
    test::run_command(db_only + " show " + std::to_string(first));
  CHECK(sc == 0);
  CHECK(shown.find("\"status\":\"parked\"") != std::string::npos);
  auto [pc, refused] =
    test::run_command(db_only + " replay " + std::to_string(first));
  CHECK(pc == 2);
  CHECK(refused.find("dlq replay needs --database.url and --kafka.brokers") !=
        std::string::npos);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE status = 'parked'") ==
        6);
  CHECK(f.count("SELECT count(*) FROM dlq_actions") == 0);
  auto [tc, status] = test::run_command(
    test::eventforge_binary() + " status --database.url='" + f.db.dsn() + "'");
  INFO(status);
  CHECK(tc == 0);
  CHECK(status.find("dlq: 6 parked") != std::string::npos);
  CHECK(status.find("consumer lag: not read (no --kafka.brokers given)") !=
        std::string::npos);
  auto fingerprint =
    f.db.scalar<std::string>("SELECT DISTINCT fingerprint FROM dlq_events");
  auto [dc, dry] =
    test::run_command(base + " replay --dry-run --group '" + fingerprint + "'");
  CHECK(dc == 0);
  CHECK(dry.find("would replay") != std::string::npos);
  CHECK(f.count("SELECT count(*) FROM dlq_actions") == 0);
  f.db.exec("DROP TRIGGER fail_g ON business_effects");
  auto [rc, out] =
    test::run_command(base + " replay --group '" + fingerprint + "'");
  INFO(out);
  CHECK(rc == 0);
  REQUIRE(test::wait_until(
    [&] { return f.count("SELECT count(*) FROM business_effects") == 6; }));
  f.settle();
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE status = 'replayed'") ==
        6);
  auto [bc, bad] = test::run_command(base + " show 999999");
  CHECK(bc != 0);
  CHECK(bad.find("no DLQ entry 999999") != std::string::npos);
}

TEST_CASE("a_record_retrying_in_one_partition_never_stalls_the_others") {
  // Retries outlast the test, on six partitions: a failure that is not the
  // record's own (a full disk) is retried as long as it lasts, never parked.
  dlq_fixture f(3, {}, 6);
  f.add_failing_trigger("stuck", "53100", 1000000);
  auto stuck = f.place("stuck");
  std::vector<std::string> others;
  for (int i = 0; i < 30; ++i)
    others.push_back(f.place("other-" + std::to_string(i)));
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM outbox WHERE sent_at IS NULL") == 0;
  }));
  std::map<std::string, int> partition_of;
  for (auto& r : kafka::read_all(f.brokers(), f.cfg.kafka.topic, 6))
    partition_of[r.key] = r.partition;
  auto blocked = partition_of.at(stuck);
  std::vector<std::string> elsewhere;
  for (auto& o : others)
    if (partition_of.at(o) != blocked)
      elsewhere.push_back(o);
  REQUIRE_FALSE(elsewhere.empty());
  // Every order outside the stuck partition is applied by both consumers.
  REQUIRE(test::wait_until([&] {
    for (auto& o : elsewhere)
      if (f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                  o + "'") != 2)
        return false;
    return true;
  }));
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                stuck + "'") == 0);
  CHECK(f.count("SELECT count(*) FROM dlq_events") == 0);
}

namespace {

/// Parks both consumers' copies of one order's creation (a permanent
/// failure), lifts the cause and returns the two entry ids.
std::vector<std::int64_t> park_one_order(dlq_fixture& f, const std::string& c,
                                         std::string& order_id) {
  f.add_failing_trigger(c, "23514", 1000000);
  order_id = f.place(c);
  f.settle();
  REQUIRE(f.count("SELECT count(*) FROM dlq_events WHERE order_key = '" +
                  order_id + "' AND status = 'parked'") == 2);
  f.db.exec("DROP TRIGGER fail_" + c + " ON business_effects");
  std::vector<std::int64_t> ids;
  for (auto consumer : {"billing", "fulfillment"})
    ids.push_back(f.db.scalar<std::int64_t>(
      "SELECT id FROM dlq_events WHERE consumer = '" + std::string(consumer) +
      "' AND order_key = '" + order_id + "'"));
  return ids;
}

/// Replays `id` through the admin endpoint until the entry has left
/// "parked" (a request that met the DLQ handler while it restarted after
/// a crash point is answered 503 and sent again, as an operator would).
void replay_until_taken(dlq_fixture& f, std::int64_t id) {
  auto status = [&] {
    return f.db.scalar<std::string>(
      "SELECT status FROM dlq_events WHERE id = " + std::to_string(id));
  };
  REQUIRE(test::wait_until(
    [&] {
      if (status() != "parked")
        return true;
      f.admin("POST", "/admin/dlq/" + std::to_string(id) + "/replay");
      return status() != "parked";
    },
    30s));
}

/// The end every replay must reach, whatever failed between its steps:
/// both entries replayed, the order applied exactly once per consumer.
void expect_applied_once_after_replay(dlq_fixture& f, const std::string& order,
                                      const std::vector<std::int64_t>& ids) {
  REQUIRE(test::wait_until(
    [&] {
      return f.count("SELECT count(*) FROM dlq_events WHERE status = "
                     "'replayed' AND id IN (" +
                     std::to_string(ids[0]) + ", " + std::to_string(ids[1]) +
                     ")") == 2 &&
             f.count("SELECT count(*) FROM business_effects WHERE order_id "
                     "= '" +
                     order + "'") == 2;
    },
    60s));
  f.settle();
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                order + "'") == 2);
  CHECK(f.count("SELECT count(*) FROM processed_events p JOIN outbox o USING "
                "(event_id) WHERE o.order_id = '" +
                order + "'") == 2);
  auto v = app::verify(f.cfg, f.db.dsn(), f.brokers());
  INFO(app::to_text(v));
  CHECK(v.ok());
}

} // namespace

TEST_CASE("a_replay_crashed_after_recording_its_intent_is_published_by_the_"
          "sweep_and_applied_once") {
  dlq_fixture f(3, {"dlq.replay_after_mark_before_publish"}, 1, 3000);
  std::string order;
  auto ids = park_one_order(f, "rm", order);
  for (auto id : ids)
    replay_until_taken(f, id);
  // The DLQ handler crashed before publishing: each entry says replaying
  // and no replay record is on the topic yet, until the sweep's.
  expect_applied_once_after_replay(f, order, ids);
  auto counters = test::counters(f.t->system(), f.t->root());
  CHECK(
    counters
      [R"(chaos_crashes_total{point="dlq.replay_after_mark_before_publish"})"] ==
    2);
  CHECK(f.count("SELECT count(*) FROM dlq_actions WHERE actor = "
                "'dlq-sweeper' AND outcome = 'published'") == 2);
}

TEST_CASE("a_replay_crashed_after_its_publish_before_the_mark_is_published_"
          "again_and_applied_once") {
  dlq_fixture f(3, {"dlq.replay_after_publish_before_mark"}, 1, 3000);
  std::string order;
  auto ids = park_one_order(f, "rp", order);
  for (auto id : ids)
    replay_until_taken(f, id);
  expect_applied_once_after_replay(f, order, ids);
  CHECK(
    test::counters(f.t->system(), f.t->root())
      [R"(chaos_crashes_total{point="dlq.replay_after_publish_before_mark"})"] ==
    2);
  // Each entry's record went out twice (the crashed replay's and the
  // sweep's); the second copy of each was a suppressed duplicate.
  auto replays = 0;
  for (auto& r : kafka::read_all(f.brokers(), f.cfg.kafka.topic, 1))
    replays += header(r, "dlq.replay_of").empty() ? 0 : 1;
  CHECK(replays == 4);
}

TEST_CASE("a_replay_whose_publish_is_refused_stays_replaying_and_the_sweep_"
          "publishes_it") {
  dlq_fixture f(3, {}, 1, 3000);
  std::string order;
  auto ids = park_one_order(f, "rf", order);
  // The broker refuses the next produce request (before appending it).
  rd_kafka_mock_push_request_errors(
    f.broker->mock_cluster(), 0 /* Produce */, 1,
    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  auto [s, b] =
    f.admin("POST", "/admin/dlq/" + std::to_string(ids[0]) + "/replay");
  INFO(b);
  CHECK(s == 200);
  CHECK(test::json_field(b, "status") == "replaying");
  replay_until_taken(f, ids[1]);
  expect_applied_once_after_replay(f, order, ids);
}

TEST_CASE("a_foreign_record_that_is_not_text_is_parked_byte_for_byte_the_"
          "partition_moves_on_and_every_dlq_listing_survives_it") {
  dlq_fixture f;
  {
    // Not EventForge's producer: raw librdkafka, a key and a value that are
    // not UTF-8 (the key holds a NUL), and headers that lie.
    std::string err;
    std::unique_ptr<RdKafka::Conf> conf(
      RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
    REQUIRE(conf->set("bootstrap.servers", f.brokers(), err) ==
            RdKafka::Conf::CONF_OK);
    std::unique_ptr<RdKafka::Producer> p(
      RdKafka::Producer::create(conf.get(), err));
    REQUIRE(p);
    auto* headers = RdKafka::Headers::create();
    headers->add("event_id", std::string("\xff\xfe not a uuid"));
    headers->add("traceparent", std::string("\xc3\x28"));
    std::string key("\xff\x00\xfe", 3), value("\xc3\x28 not json \xa0\xa1");
    REQUIRE(p->produce(f.cfg.kafka.topic, 0, RdKafka::Producer::RK_MSG_COPY,
                       value.data(), value.size(), key.data(), key.size(), 0,
                       headers, nullptr) == RdKafka::ERR_NO_ERROR);
    REQUIRE(p->flush(10000) == RdKafka::ERR_NO_ERROR);
  }
  auto good = f.place("after-foreign");
  f.settle();
  // Parked at once by both consumers, the key and value kept byte for byte,
  // the key's printable form for matching and display.
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE " + named_by_bytes +
                " AND error_class = 'undecodable' AND status = "
                "'parked' AND key = decode('ff00fe', 'hex') AND order_key = "
                "'\\xff\\x00\\xfe' AND value = decode('" +
                std::string("c328206e6f74206a736f6e20a0a1") + "', 'hex')") ==
        2);
  // The record behind it was applied.
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                good + "'") == 2);
  // The DLQ handler read both DLQ copies (they name no valid event ID) and
  // stored nothing new; nothing crashed on the way.
  REQUIRE(test::wait_until([&] {
    return kafka::committed_offsets(f.brokers(), "eventforge.dlq",
                                    config::dlq_topic_of(f.cfg), 1)[0] == 2;
  }));
  CHECK(f.count("SELECT count(*) FROM dlq_events") == 2);
  for (auto& [series, n] : test::counters(f.t->system(), f.t->root()))
    if (series.rfind("actor_restarts_total", 0) == 0)
      CHECK(n == 0);
  // Every listing survives it: the admin endpoint, one entry, the CLI.
  auto [s, body] = f.admin("GET", "/admin/dlq");
  REQUIRE(s == 200);
  auto list = nlohmann::json::parse(body);
  REQUIRE(list.size() == 2);
  for (auto& e : list) {
    CHECK(e["key_hex"] == "ff00fe");
    CHECK(e["value_hex"] == "c328206e6f74206a736f6e20a0a1");
    CHECK(e["order_key"] == "\\xff\\x00\\xfe");
  }
  auto id = list[0]["id"].get<std::int64_t>();
  auto [s1, one] = f.admin("GET", "/admin/dlq/" + std::to_string(id));
  CHECK(s1 == 200);
  CHECK(nlohmann::json::parse(one)["value_hex"] ==
        "c328206e6f74206a736f6e20a0a1");
  auto [code, out] = test::run_command(
    test::eventforge_binary() + " dlq list --database.url='" + f.db.dsn() +
    "' --kafka.brokers='" + f.brokers() + "' 2>&1");
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("order \\xff\\x00\\xfe undecodable") != std::string::npos);
}

TEST_CASE("a_discarded_event_is_never_applied_by_its_consumer_whatever_the_"
          "retentions_and_whoever_replays_or_republishes_it") {
  // Every retention at 1 s: the janitor prunes the discarded entry and
  // deletes the other consumer's mark once the outbox row is gone.
  dlq_fixture f(1, {}, 1, 30000, 1);
  // The creation fails once per consumer (a check violation: parked).
  f.add_failing_trigger("dd", "23514", 2);
  auto order = f.place("dd");
  f.settle();
  REQUIRE(f.count("SELECT count(*) FROM dlq_events WHERE order_key = '" +
                  order + "' AND status = 'parked'") == 2);
  auto entry = [&](const char* consumer) {
    return std::to_string(f.db.scalar<long>(
      "SELECT id FROM dlq_events WHERE consumer = '" + std::string(consumer) +
      "' AND order_key = '" + order + "'"));
  };
  auto event = f.db.scalar<std::string>(
    "SELECT event_id FROM dlq_events WHERE order_key = '" + order +
    "' LIMIT 1");
  auto billing_effects = [&] {
    return f.count("SELECT count(*) FROM business_effects WHERE consumer = "
                   "'billing' AND event_id = '" +
                   event + "'");
  };
  auto [ds, db] =
    f.admin("POST", "/admin/dlq/" + entry("billing") + "/discard");
  INFO(db);
  REQUIRE(ds == 200);
  // The janitor ran past every retention: the outbox row is gone and the
  // discarded entry kept nothing but its decision.
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM outbox WHERE event_id = '" + event +
                   "'") == 0 &&
           f.count("SELECT count(*) FROM dlq_events WHERE consumer = "
                   "'billing' AND order_key = '" +
                   order + "' AND value <> ''::bytea") == 0;
  }));
  // Fulfillment's copy is replayed: fulfillment applies it, billing not.
  auto [rs, rb] =
    f.admin("POST", "/admin/dlq/" + entry("fulfillment") + "/replay");
  INFO(rb);
  REQUIRE(rs == 200);
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM business_effects WHERE consumer = "
                   "'fulfillment' AND event_id = '" +
                   event + "'") == 1;
  }));
  f.settle();
  CHECK(billing_effects() == 0);
  // A second replay of the replayed entry is refused: its consumer's mark
  // may be gone by now, and nothing else would stop a second effect.
  auto [again, ab] =
    f.admin("POST", "/admin/dlq/" + entry("fulfillment") + "/replay");
  CHECK(again == 409);
  CHECK(ab.find("was replayed already") != std::string::npos);
  // After a restart, the original record published once more (as a repair
  // or a group starting over would deliver it) and every DLQ copy read
  // again: billing's decision holds, and no decided entry is parked anew.
  f.restart();
  f.produce_again(f.cfg.kafka.topic);
  f.produce_again(config::dlq_topic_of(f.cfg));
  f.settle();
  REQUIRE(test::wait_until([&] {
    auto dlq = config::dlq_topic_of(f.cfg);
    return kafka::committed_offsets(f.brokers(), "eventforge.dlq", dlq, 1) ==
           kafka::log_end_offsets(f.brokers(), dlq, 1);
  }));
  CHECK(billing_effects() == 0);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE status = 'parked'") ==
        0);
  CHECK(f.db.scalar<std::string>(
          "SELECT outcome FROM processed_events WHERE consumer = 'billing' "
          "AND event_id = '" +
          event + "'") == "discarded");
}

TEST_CASE("an_undecodable_record_with_an_event_id_header_gets_one_entry_per_"
          "consumer_and_its_discard_releases_no_phantom") {
  dlq_fixture f;
  auto order = new_uuid_v7();
  auto header_id = new_uuid_v7(); // a valid UUID, as a foreign tool may set
  {
    kafka::outbox_producer p(f.brokers(), f.cfg.kafka.topic, 10000, "foreign");
    REQUIRE(
      p.publish_raw(order, "{not json", {{"event_id", header_id}}).persisted);
  }
  f.place("after-undecodable");
  f.settle();
  // The DLQ handler read both copies and filed them under the consumers'
  // own entries (named by the record's bytes), not under the header.
  auto dlq = config::dlq_topic_of(f.cfg);
  REQUIRE(test::wait_until([&] {
    return kafka::committed_offsets(f.brokers(), "eventforge.dlq", dlq, 1) ==
           kafka::log_end_offsets(f.brokers(), dlq, 1);
  }));
  CHECK(f.count("SELECT count(*) FROM dlq_events") == 2);
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE " + named_by_bytes) ==
        2);
  // Discarding one leaves nothing of that consumer's parked behind it.
  auto id =
    f.db.scalar<long>("SELECT id FROM dlq_events WHERE consumer = 'billing'");
  auto [s, b] =
    f.admin("POST", "/admin/dlq/" + std::to_string(id) + "/discard");
  INFO(b);
  REQUIRE(s == 200);
  f.settle();
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE consumer = 'billing' "
                "AND status <> 'discarded'") == 0);
  CHECK(f.count("SELECT count(*) FROM dlq_actions WHERE action = "
                "'release'") == 0);
}

TEST_CASE("a_replay_for_one_consumer_releases_nothing_of_another_consumer_"
          "that_only_suppressed_it") {
  dlq_fixture f(1);
  // Billing fails the creation, fulfillment the cancellation: each parks a
  // different event of the same order.
  f.db.exec(
    "CREATE FUNCTION fail_split() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN IF (SELECT customer_id FROM orders WHERE id = NEW.order_id) = "
    "'split' AND ((NEW.consumer = 'billing' AND NEW.kind = 'debit') OR "
    "(NEW.consumer = 'fulfillment' AND NEW.kind = 'cancelled')) THEN RAISE "
    "EXCEPTION 'split failure' USING ERRCODE = '23514'; END IF; RETURN NEW; "
    "END $$; CREATE TRIGGER fail_split BEFORE INSERT ON business_effects FOR "
    "EACH ROW EXECUTE FUNCTION fail_split()");
  auto order = f.place("split");
  REQUIRE(
    test::post_json(f.t->url(), "/orders/" + order + "/cancel", "").first ==
    202);
  f.settle();
  // billing: creation parked, cancel parked behind it; fulfillment: the
  // creation applied, the cancel parked.
  REQUIRE(f.count("SELECT count(*) FROM dlq_events WHERE consumer = "
                  "'billing' AND status = 'parked'") == 2);
  REQUIRE(f.count("SELECT count(*) FROM dlq_events WHERE consumer = "
                  "'fulfillment' AND status = 'parked'") == 1);
  f.db.exec("DROP TRIGGER fail_split ON business_effects");
  auto head = f.db.scalar<long>(
    "SELECT id FROM dlq_events WHERE consumer = 'billing' AND error_class = "
    "'db_permanent'");
  auto [s, b] =
    f.admin("POST", "/admin/dlq/" + std::to_string(head) + "/replay");
  INFO(b);
  REQUIRE(s == 200);
  // Billing applies its creation and releases its own cancel...
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM business_effects WHERE consumer = "
                   "'billing' AND order_id = '" +
                   order + "'") == 2;
  }));
  f.settle();
  // ...while fulfillment, which suppressed billing's replay as a
  // duplicate, released nothing: its cancel waits for its own operator.
  CHECK(f.count("SELECT count(*) FROM dlq_events WHERE consumer = "
                "'fulfillment' AND status = 'parked'") == 1);
  CHECK(f.count("SELECT count(*) FROM business_effects WHERE consumer = "
                "'fulfillment' AND order_id = '" +
                order + "' AND kind = 'cancelled'") == 0);
}

namespace {

/// A trigger that ends the session of whoever makes an update of
/// dlq_events matching `when` (an SQL condition on OLD and NEW): the
/// server terminates that backend, as a failover or a network cut would.
void break_sessions_on(dlq_fixture& f, const std::string& when) {
  f.db.exec("CREATE FUNCTION break_session() RETURNS trigger LANGUAGE "
            "plpgsql AS $$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid())"
            "; RETURN NEW; END $$; CREATE TRIGGER break_session BEFORE UPDATE "
            "ON dlq_events FOR EACH ROW WHEN (" +
            when + ") EXECUTE FUNCTION break_session()");
}

} // namespace

TEST_CASE("a_replay_whose_session_breaks_after_the_publish_answers_that_it_"
          "was_published_and_the_sweep_marks_it") {
  dlq_fixture f(3, {}, 1, 3000);
  std::string order;
  auto ids = park_one_order(f, "rb", order);
  // The record goes out and is acknowledged; the session breaks as the
  // entry is marked replayed.
  break_sessions_on(f, "OLD.status = 'replaying' AND NEW.status = 'replayed'");
  auto [s, b] =
    f.admin("POST", "/admin/dlq/" + std::to_string(ids[0]) + "/replay");
  INFO(b);
  // Not "nothing was written": it was published, and the answer says so.
  CHECK(s == 200);
  auto answer = nlohmann::json::parse(b, nullptr, false);
  CHECK(answer["done"] == true);
  CHECK(answer["status"] == "replaying");
  CHECK(answer["result"].get<std::string>().find("stays replaying until the "
                                                 "DLQ handler marks it") !=
        std::string::npos);
  auto replays = 0;
  for (auto& r : kafka::read_all(f.brokers(), f.cfg.kafka.topic, 1))
    replays += header(r, "dlq.replay_of") == std::to_string(ids[0]);
  CHECK(replays == 1);
  // Once sessions hold again, the sweep publishes it once more (a
  // suppressed duplicate) and marks it.
  f.db.exec("DROP TRIGGER break_session ON dlq_events");
  replay_until_taken(f, ids[1]);
  expect_applied_once_after_replay(f, order, ids);
}

TEST_CASE("a_discard_whose_release_fails_answers_that_it_was_discarded_and_"
          "the_dlq_handler_releases_the_order") {
  dlq_fixture f(3, {}, 1, 3000);
  f.add_failing_trigger("dr", "23514", 1000000);
  auto order = f.place("dr");
  REQUIRE(
    test::post_json(f.t->url(), "/orders/" + order + "/cancel", "").first ==
    202);
  f.settle();
  f.db.exec("DROP TRIGGER fail_dr ON business_effects");
  auto head = std::to_string(f.db.scalar<long>(
    "SELECT id FROM dlq_events WHERE consumer = 'billing' AND error_class = "
    "'db_permanent'"));
  // The discard commits; the release of the cancel behind it breaks its
  // session as it starts.
  break_sessions_on(f, "OLD.status = 'parked' AND NEW.status = 'replaying'");
  auto [s, b] = f.admin("POST", "/admin/dlq/" + head + "/discard");
  INFO(b);
  CHECK(s == 200);
  auto answer = nlohmann::json::parse(b, nullptr, false);
  CHECK(answer["status"] == "discarded");
  CHECK(answer["result"].get<std::string>().find(
          "the DLQ handler releases it") != std::string::npos);
  CHECK(f.db.scalar<std::string>("SELECT status FROM dlq_events WHERE id = " +
                                 head) == "discarded");
  // Sessions hold again: the DLQ handler finds the cancel waiting behind a
  // discarded event only, and releases it; billing applies the late-event
  // rule (no debit happened, nothing is refunded).
  f.db.exec("DROP TRIGGER break_session ON dlq_events");
  // Wait for both: the sweep records its release after the broker's ack,
  // and billing may apply the cancel before that commit.
  auto released = [&] {
    return f.count("SELECT count(*) FROM dlq_actions WHERE action = "
                   "'release' AND actor = 'dlq-sweeper'");
  };
  REQUIRE(test::wait_until([&] {
    return f.count("SELECT count(*) FROM business_effects WHERE consumer = "
                   "'billing' AND order_id = '" +
                   order + "'") == 1 &&
           released() >= 1;
  }));
  CHECK(f.db.scalar<std::string>("SELECT kind FROM business_effects WHERE "
                                 "consumer = 'billing' AND order_id = '" +
                                 order + "'") == "refund_skipped");
  CHECK(released() == 1);
}

TEST_CASE("a_full_disk_or_a_read_only_standby_is_an_outage_retried_past_the_"
          "attempt_budget_never_parked") {
  // Two attempts at most for a failure of the event's own; these fail six
  // times each and are not the event's fault.
  dlq_fixture f(2);
  f.add_failing_trigger("diskfull", "53100", 6);
  f.add_failing_trigger("standby", "25006", 6);
  auto full = f.place("diskfull");
  auto standby = f.place("standby");
  f.settle();
  for (auto& order : {full, standby})
    CHECK(f.count("SELECT count(*) FROM business_effects WHERE order_id = '" +
                  order + "'") == 2);
  CHECK(f.count("SELECT count(*) FROM dlq_events") == 0);
  // Retried as outages: nothing crashed or escalated on the way.
  for (auto& [series, n] : test::counters(f.t->system(), f.t->root()))
    if (series.rfind("actor_restarts_total", 0) == 0 &&
        series.find("db_unavailable") == std::string::npos)
      CHECK(n == 0);
}
