// Metrics an operator relies on, checked against durable state and against
// Prometheus' own validator.

#include "kafka/offsets.hpp"
#include "kafka/outbox_producer.hpp"
#include "persistence/dlq_store.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/config/options.hpp>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>

#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

using namespace ef;
using namespace std::chrono_literals;

namespace {

using test::scrape;
using test::value_of;

/// The value of a series that must be in the exposition.
double present(const std::string& text, const std::string& series) {
  auto v = value_of(text, series);
  if (!v)
    FAIL("series " << series << " is missing from /metrics");
  return *v;
}

/// Prometheus' own validator over an exposition.
void check_with_promtool(const std::string& exposition) {
  test::temp_dir dir;
  std::ofstream(dir.path + "/metrics.txt") << exposition;
  auto [code, out] =
    test::run_command("promtool check metrics < " + dir.path + "/metrics.txt");
  INFO(out);
  CHECK(code == 0);
}

struct obs_fixture {
  obs_fixture() {
    cfg.kafka.partitions = 2;
    cfg.kafka.delivery_timeout_ms = 1500;
    cfg.http.admin_token = "s3cret";
    t = std::make_unique<test::tree>(
      cfg, endpoints{db.dsn(), broker.bootstrap_servers()});
  }
  void place(const std::string& customer) {
    REQUIRE(
      test::post_json(t->url(), "/orders", test::order_body(customer, 1, 100))
        .first == 201);
  }
  test::database db;
  config::settings cfg = test::test_settings();
  kafka::embedded_broker broker{1, {{"orders", 2}, {"orders.dlq", 2}}};
  std::unique_ptr<test::tree> t;
};

} // namespace

TEST_CASE("metrics_pass_promtool_and_no_label_is_an_order_or_event_id") {
  obs_fixture f;
  for (int i = 0; i < 5; ++i)
    f.place("c" + std::to_string(i));
  REQUIRE(test::wait_until([&] {
    return test::quiescent(f.db, f.cfg, f.broker.bootstrap_servers());
  }));
  auto text = scrape(f.t->url());
  check_with_promtool(text);
  // No order or event ID is a label: no UUID anywhere in the exposition.
  CHECK(persistence::dlq_store::fingerprint_of("", text).find("<uuid>") ==
        std::string::npos);
  CHECK(value_of(text, R"(consumer_applied_total{consumer="billing"})") == 5);
  CHECK(text.find(
          "end_to_end_seconds_bucket{consumer=\"billing\",le=\"+Inf\"} 5") !=
        std::string::npos);
  CHECK(value_of(text,
                 R"(http_requests_total{route="/orders",status="2xx"})") == 5);
}

TEST_CASE("a_fresh_tree_exports_every_series_at_zero_and_the_end_to_end_"
          "count_equals_the_effects_applied") {
  obs_fixture f;
  // Before the first order: every known series is there, at 0, so rates
  // and alerts read 0 instead of "no data".
  auto fresh = scrape(f.t->url());
  for (auto& c : f.cfg.consumer.enabled) {
    auto who = "{consumer=\"" + c + "\"}";
    for (auto h : {"end_to_end_seconds", "consumer_handler_seconds",
                   "consumer_batch_size"})
      CHECK(present(fresh, std::string(h) + "_count" + who) == 0);
    CHECK(present(fresh, "consumer_applied_total" + who) == 0);
  }
  for (auto h :
       {"api_batch_size", "relay_batch_size", "relay_publish_ack_seconds",
        "relay_claim_to_mark_seconds", "outbox_publish_delay_seconds"})
    CHECK(present(fresh, std::string(h) + "_count") == 0);
  CHECK(
    present(fresh, R"(http_request_duration_seconds_count{route="/orders"})") ==
    0);
  CHECK(present(
          fresh,
          R"(actor_restarts_total{kind="partition",reason="exception"})") == 0);
  // The process's own figures.
  CHECK(present(fresh, "process_cpu_seconds_total") > 0);
  CHECK(present(fresh, "process_resident_memory_bytes") > 0);
  CHECK(present(fresh, "process_open_fds") > 0);
  CHECK(present(fresh, "process_threads") > 1);
  CHECK(present(fresh, "process_start_time_seconds") > 1.7e9);
  check_with_promtool(fresh);

  for (int i = 0; i < 7; ++i)
    f.place("e2e" + std::to_string(i));
  REQUIRE(test::wait_until([&] {
    return test::quiescent(f.db, f.cfg, f.broker.bootstrap_servers());
  }));
  auto text = scrape(f.t->url());
  // One end-to-end observation per effect a consumer applied, no more.
  for (auto& c : f.cfg.consumer.enabled) {
    auto effects = f.db.scalar<long>(
      "SELECT count(*) FROM business_effects WHERE consumer = '" + c + "'");
    CHECK(effects == 7);
    CHECK(present(text, "end_to_end_seconds_count{consumer=\"" + c + "\"}") ==
          effects);
  }
  CHECK(present(text, "relay_claim_to_mark_seconds_count") > 0);
  // One per acknowledged row: each of the 7 was published once.
  CHECK(present(text, "outbox_publish_delay_seconds_count") == 7);
  // The page's overview reads the same histograms for its live stages.
  httplib::Client cli(f.t->url());
  auto res = cli.Get("/overview");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  auto stages = nlohmann::json::parse(res->body)["stages"];
  REQUIRE(stages.size() == 2 + f.cfg.consumer.enabled.size());
  for (auto& s : stages) {
    INFO(s.dump());
    auto name = s["stage"].get<std::string>();
    if (name == "api")
      CHECK(s["total"] >= 7); // POST /orders, whatever else the route served
    else
      CHECK(s["total"] == 7); // rows published; effects per consumer
  }
  CHECK(present(text, "api_batch_size_sum") == 7);
}

TEST_CASE("broker_outage_grows_the_outbox_age_and_publish_errors_then_the_"
          "backlog_drains_to_zero") {
  obs_fixture f;
  f.place("warm");
  REQUIRE(test::wait_until([&] {
    return test::quiescent(f.db, f.cfg, f.broker.bootstrap_servers());
  }));
  f.broker.set_down(true);
  f.place("during-outage");
  std::string text;
  auto seen = [&] {
    return "outbox_unsent_rows " +
           std::to_string(value_of(text, "outbox_unsent_rows").value_or(-1)) +
           ", outbox_oldest_unsent_age_seconds " +
           std::to_string(
             value_of(text, "outbox_oldest_unsent_age_seconds").value_or(-1));
  };
  if (!test::wait_until([&] {
        text = scrape(f.t->url());
        return value_of(text, "outbox_oldest_unsent_age_seconds") > 2 &&
               value_of(text, "outbox_unsent_rows") == 1;
      }))
    FAIL("the outbox gauges never showed the unsent row aging; last scrape: "
         << seen() << ", sampled at "
         << value_of(text, "gauges_sampled_timestamp_seconds{source="
                           "\"database\"}")
              .value_or(-1));
  REQUIRE(test::wait_until([&] {
    auto text = scrape(f.t->url());
    double errors = 0;
    for (int s = 0; s < f.cfg.relay.shards; ++s)
      errors += present(text, "relay_publish_errors_total{shard=\"" +
                                std::to_string(s) + "\"}");
    return errors >= 1;
  }));
  f.broker.set_down(false);
  REQUIRE(test::wait_until([&] {
    auto text = scrape(f.t->url());
    return value_of(text, "outbox_unsent_rows") == 0 &&
           value_of(text, "outbox_oldest_unsent_age_seconds") == 0;
  }));
  CHECK(f.db.scalar<int>("SELECT count(*) FROM outbox WHERE sent_at IS NULL") ==
        0);
}

TEST_CASE("a_duplicate_of_a_processed_event_counts_one_idempotency_conflict_"
          "per_consumer_and_lag_matches_the_broker") {
  obs_fixture f;
  f.place("c");
  auto brokers = f.broker.bootstrap_servers();
  REQUIRE(
    test::wait_until([&] { return test::quiescent(f.db, f.cfg, brokers); }));
  auto before = scrape(f.t->url());
  auto records = kafka::read_all(brokers, "orders", 2);
  REQUIRE(records.size() == 1);
  kafka::outbox_producer p(brokers, "orders", 10000, "test");
  REQUIRE(p.publish_raw(records[0].key, records[0].value,
                        {{"event_id", records[0].event_id}})
            .persisted);
  REQUIRE(
    test::wait_until([&] { return test::quiescent(f.db, f.cfg, brokers); }));
  auto after = scrape(f.t->url());
  for (std::string c : {"billing", "fulfillment"}) {
    auto series =
      "consumer_duplicates_suppressed_total{consumer=\"" + c + "\"}";
    INFO(c);
    CHECK(present(after, series) - present(before, series) == 1);
  }
  // Lag = log end - committed, for every consumer and partition, as the
  // gauge sampler reads it: within a sample interval of quiescence.
  auto ends = kafka::log_end_offsets(brokers, "orders", 2);
  std::map<std::string, double> expected;
  for (std::string c : {"billing", "fulfillment"}) {
    auto committed =
      kafka::committed_offsets(brokers, "eventforge." + c, "orders", 2);
    for (int part = 0; part < 2; ++part)
      expected["consumer_lag{consumer=\"" + c + "\",partition=\"" +
               std::to_string(part) + "\"}"] =
        static_cast<double>(ends[part] -
                            std::max<std::int64_t>(committed[part], 0));
  }
  std::string last;
  bool matches = test::wait_until([&] {
    last = scrape(f.t->url());
    for (auto& [series, value] : expected)
      if (value_of(last, series) != value)
        return false;
    return true;
  });
  for (auto& [series, value] : expected) {
    INFO(series);
    CHECK(value_of(last, series) == value);
  }
  CHECK(matches);
}

TEST_CASE("a_poisoned_record_moves_the_dlq_gauges_and_replay_moves_them_"
          "back") {
  obs_fixture f;
  f.db.exec("CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN RAISE EXCEPTION 'poisoned' USING ERRCODE = '23514'; END $$;"
            "CREATE TRIGGER poison BEFORE INSERT ON business_effects FOR EACH "
            "ROW EXECUTE FUNCTION poison()");
  f.place("p");
  REQUIRE(test::wait_until([&] {
    return value_of(scrape(f.t->url()), R"(dlq_entries{status="parked"})") == 2;
  }));
  CHECK(value_of(scrape(f.t->url()), "dlq_oldest_parked_age_seconds") > 0);
  f.db.exec("DROP TRIGGER poison ON business_effects");
  httplib::Client cli(f.t->url());
  httplib::Headers auth{{"Authorization", "Bearer s3cret"}};
  for (auto id : {f.db.scalar<int>("SELECT min(id) FROM dlq_events"),
                  f.db.scalar<int>("SELECT max(id) FROM dlq_events")}) {
    auto res =
      cli.Post(("/admin/dlq/" + std::to_string(id) + "/replay").c_str(), auth,
               "", "text/plain");
    REQUIRE(res);
    CHECK(res->status == 200);
  }
  REQUIRE(test::wait_until([&] {
    auto text = scrape(f.t->url());
    return value_of(text, R"(dlq_entries{status="parked"})") == 0 &&
           value_of(text, R"(dlq_entries{status="replayed"})") == 2 &&
           value_of(text, "dlq_oldest_parked_age_seconds") == 0 &&
           // "replayed" is set when the replay is published, before the
           // consumers apply it: wait for the durable effect too.
           f.db.scalar<int>("SELECT count(*) FROM business_effects") >= 2;
  }));
  CHECK(f.db.scalar<int>("SELECT count(*) FROM business_effects") == 2);
}

TEST_CASE("retention_deletes_only_sent_rows_past_the_retention_in_batches_"
          "while_orders_flow") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.retention.outbox_s = 3600;
  cfg.retention.batch_size = 5;
  cfg.retention.interval_ms = 50;
  kafka::embedded_broker broker{1, {{"orders", 6}, {"orders.dlq", 6}}};
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  auto place = [&](int n, const std::string& who) {
    for (int i = 0; i < n; ++i)
      REQUIRE(test::post_json(t.url(), "/orders", test::order_body(who, 1, 1))
                .first == 201);
  };
  place(20, "early");
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  // Twelve sent rows age past the retention (counted from creation); one
  // old row was never sent (its shard has no relay) and must survive.
  db.exec("UPDATE outbox SET created_at = now() - interval '2 hours', sent_at "
          "= now() - interval '2 hours' WHERE seq IN (SELECT seq FROM outbox "
          "ORDER BY seq LIMIT 12)");
  db.exec("INSERT INTO outbox (event_id, order_id, shard, event_type, "
          "payload, created_at) VALUES (gen_random_uuid(), gen_random_uuid(), "
          "999, 'OrderCreated', '{}', now() - interval '3 hours')");
  // Catch2's assertions are not thread-safe (TSan found the main thread's
  // REQUIRE racing one in here): the thread only records what it got.
  std::vector<int> late_statuses;
  std::thread more([&] {
    for (int i = 0; i < 20; ++i)
      late_statuses.push_back(
        test::post_json(t.url(), "/orders", test::order_body("late", 1, 1))
          .first);
  });
  REQUIRE(test::wait_until([&] {
    return db.scalar<int>("SELECT count(*) FROM outbox WHERE created_at < "
                          "now() - interval '1 hour' AND sent_at IS NOT "
                          "NULL") == 0;
  }));
  more.join();
  CHECK(std::count(late_statuses.begin(), late_statuses.end(), 201) == 20);
  // The janitor counts a batch after its transaction commits: the last
  // batch's rows can be gone a moment before the counter says so.
  auto deleted = [&] {
    return test::counters(
      t.system(), t.root())[R"(retention_deleted_total{table="outbox"})"];
  };
  CHECK(test::wait_until([&] { return deleted() >= 12; }));
  CHECK(deleted() == 12);
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox WHERE shard = 999") == 1);
  // Recent rows stay: 8 early ones and the 20 placed meanwhile.
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox WHERE shard <> 999") == 28);
  // Marks and effects are untouched (processed_events has its own setting).
  CHECK(db.scalar<int>("SELECT count(*) FROM processed_events") >= 40);
}

TEST_CASE("one_order_id_grepped_from_the_json_log_shows_every_hop_in_order_"
          "with_one_trace_id") {
  test::database db;
  test::temp_dir dir;
  auto log = dir.path + "/serve.log";
  test::child_process serve(
    {test::eventforge_binary(), "serve", "--http.port=0",
     "--database.url=" + db.dsn(), "--kafka.session-timeout-ms=6000",
     "--kafka.fetch-wait-max-ms=20", "--log.format=json", "--log.level=debug"},
    log);
  auto ready = serve.await_line("ready");
  auto url = test::ready_field(ready, "http");
  auto brokers = test::ready_field(ready, "kafka");
  REQUIRE_FALSE(url.empty());
  std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  httplib::Client cli(url);
  auto res = cli.Post("/orders",
                      {{"traceparent", "00-" + trace + "-00f067aa0ba902b7-01"}},
                      test::order_body("traced", 1, 100), "application/json");
  REQUIRE(res);
  REQUIRE(res->status == 201);
  auto order = test::json_field(res->body, "order_id");
  auto cfg = test::test_settings();
  REQUIRE(test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));
  serve.signal(SIGTERM);
  REQUIRE(serve.wait() == 0);

  std::ifstream in(log);
  std::string line;
  std::vector<std::string> hops;
  while (std::getline(in, line)) {
    if (line.find(order) == std::string::npos)
      continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    INFO(line);
    REQUIRE_FALSE(j.is_discarded()); // every line is one JSON object
    CHECK(j.value("trace_id", "") == trace);
    CHECK(j.value("order_id", "") == order);
    auto hop = j.value("msg", "");
    if (j.contains("consumer"))
      hop += "/" + j.value("consumer", "");
    hops.push_back(hop);
  }
  auto at = [&](const std::string& hop) {
    auto i = std::find(hops.begin(), hops.end(), hop);
    INFO("missing hop " << hop);
    REQUIRE(i != hops.end());
    return i - hops.begin();
  };
  // Only causal orderings are asserted: e.g. NOTIFY wakes the relay at
  // COMMIT, so "claimed" may be written before the API logs "committed".
  CHECK(at("accepted") < at("committed"));
  CHECK(at("accepted") < at("claimed"));
  CHECK(at("claimed") < at("published"));
  CHECK(at("published") < at("acked"));
  CHECK(at("acked") < at("marked"));
  for (std::string c : {"billing", "fulfillment"}) {
    // A consumer may fetch the record before the relay has processed the
    // broker's ack, so only "claimed before delivered" is causal.
    CHECK(at("claimed") < at("delivered/" + c));
    CHECK(at("delivered/" + c) < at("applied/" + c));
    CHECK(at("applied/" + c) < at("offset_committed/" + c));
  }
}

TEST_CASE("scrapes_under_load_open_no_database_session_and_serve_the_"
          "sampled_gauges") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.kafka.partitions = 2;
  // No janitor round inside the measured window: it opens a session each.
  cfg.retention.interval_ms = 3600000;
  kafka::embedded_broker broker{1, {{"orders", 2}, {"orders.dlq", 2}}};
  auto brokers = broker.bootstrap_servers();
  test::tree t(cfg, endpoints{db.dsn(), brokers});
  // A partition worker opens its session at its first record, so warm-up
  // orders go in until every partition has one: otherwise a partition the
  // warm-up missed (1 run in 4 with 3 orders) opens its consumers' sessions
  // inside the window, and that is not a scrape's doing.
  REQUIRE(test::warm_up_every_partition(t, db, cfg, brokers, "warm"));
  // The sampler has read both sources since the orders were applied.
  REQUIRE(test::wait_until([&] {
    auto text = scrape(t.url());
    return value_of(text,
                    R"(consumer_lag{consumer="billing",partition="0"})") ==
             0.0 &&
           value_of(text,
                    R"(consumer_lag{consumer="billing",partition="1"})") ==
             0.0 &&
           value_of(text, "outbox_unsent_rows") == 0.0;
  }));
  auto sessions = [&] {
    return db.scalar<long>("SELECT sessions FROM pg_stat_database WHERE "
                           "datname = current_database()");
  };
  auto before = sessions();
  // 4 clients scrape 25 times each while orders keep coming.
  std::vector<int> statuses;
  std::mutex statuses_mtx;
  std::vector<std::thread> scrapers;
  for (int c = 0; c < 4; ++c)
    scrapers.emplace_back([&] {
      httplib::Client cli(t.url());
      for (int i = 0; i < 25; ++i) {
        auto res = cli.Get("/metrics");
        std::lock_guard<std::mutex> guard{statuses_mtx};
        statuses.push_back(res ? res->status : -1);
      }
    });
  for (int i = 0; i < 20; ++i)
    REQUIRE(
      test::post_json(t.url(), "/orders", test::order_body("load", 1, 100))
        .first == 201);
  for (auto& s : scrapers)
    s.join();
  CHECK(statuses == std::vector<int>(100, 200));
  // Every session EventForge uses is open since before the window; a scrape
  // that connected would add one per scrape (100). PostgreSQL flushes a
  // session's count at a transaction end or its exit, so a session that
  // began just before the window (the last quiescence check's) may still be
  // counted inside it: at most two.
  CHECK(sessions() - before <= 2);
  auto text = scrape(t.url());
  auto sampled =
    present(text, R"(gauges_sampled_timestamp_seconds{source="database"})");
  CHECK(sampled > 1.7e9); // a Unix time, not a placeholder
  CHECK(present(text, R"(gauges_sampled_timestamp_seconds{source="broker"})") >
        1.7e9);
}

TEST_CASE("a_drained_tree_kept_running_still_samples_its_gauges") {
  obs_fixture f;
  f.place("before");
  auto brokers = f.broker.bootstrap_servers();
  REQUIRE(
    test::wait_until([&] { return test::quiescent(f.db, f.cfg, brokers); }));
  REQUIRE(ef::drain(f.t->system(), f.t->root(), std::chrono::seconds(30)));
  auto drained_at = std::chrono::duration<double>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  // A drain stops the relays, not the API: this order is committed and
  // stays unsent, and only a sampler still running after the drain can
  // show it.
  f.place("after");
  auto unsent = [&] {
    return f.db.scalar<int>("SELECT count(*) FROM outbox WHERE sent_at IS "
                            "NULL");
  };
  REQUIRE(unsent() == 1);
  std::string text;
  REQUIRE(test::wait_until(
    [&] {
      text = scrape(f.t->url());
      return value_of(text, "outbox_unsent_rows") == 1.0 &&
             present(text,
                     R"(gauges_sampled_timestamp_seconds{source="broker"})") >
               drained_at;
    },
    std::chrono::seconds(20)));
  CHECK(
    present(text, R"(gauges_sampled_timestamp_seconds{source="database"})") >
    drained_at);
  CHECK(unsent() == 1);
}

TEST_CASE("idempotency_keys_go_and_resolved_dlq_entries_are_pruned_after_"
          "their_retention_in_batches_and_an_older_key_is_a_new_request") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.kafka.partitions = 1;
  cfg.api.idempotency_retention_s = 3600;
  cfg.retention.outbox_s = 3600;
  cfg.retention.dlq_resolved_s = 7200;
  cfg.retention.batch_size = 2;
  cfg.retention.interval_ms = 50;
  cfg.http.admin_token = "ops:s3cret";
  kafka::embedded_broker broker{1, {{"orders", 1}, {"orders.dlq", 1}}};
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  std::map<std::string, std::string> first;
  for (auto key : {"k1", "k2", "k3", "k4", "k5"}) {
    auto [s, b] =
      test::post_json(t.url(), "/orders", test::order_body("c", 1, 1), key);
    REQUIRE(s == 201);
    first[key] = test::json_field(b, "order_id");
  }
  // Three keys age past the retention; two stay.
  db.exec("UPDATE idempotency_keys SET created_at = now() - interval '2 "
          "hours' WHERE key IN ('k1', 'k2', 'k3')");
  // Two junk records are parked by both consumers; three of the four
  // entries are discarded, two of them long ago.
  for (int i = 0; i < 2; ++i) {
    kafka::outbox_producer p(broker.bootstrap_servers(), "orders", 10000, "t");
    REQUIRE(p.publish_raw(std::to_string(i), "junk", {}).persisted);
  }
  REQUIRE(test::wait_until(
    [&] { return db.scalar<int>("SELECT count(*) FROM dlq_events") == 4; }));
  auto ids = db.scalar<std::string>(
    "SELECT string_agg(id::text, ',' ORDER BY id) FROM dlq_events");
  std::vector<std::string> entry;
  for (size_t from = 0, comma; from <= ids.size(); from = comma + 1) {
    comma = ids.find(',', from);
    entry.push_back(ids.substr(from, comma - from));
    if (comma == std::string::npos)
      break;
  }
  REQUIRE(entry.size() == 4);
  for (int i = 0; i < 3; ++i) {
    httplib::Client cli(t.url());
    auto r = cli.Post(("/admin/dlq/" + entry[i] + "/discard").c_str(),
                      {{"Authorization", "Bearer s3cret"}}, "", "text/plain");
    REQUIRE(r);
    REQUIRE(r->status == 200);
  }
  db.exec("UPDATE dlq_events SET resolved_at = now() - interval '3 hours', "
          "parked_at = now() - interval '3 hours' WHERE id IN (" +
          entry[0] + ", " + entry[1] + ")");
  // The one still parked is never pruned, however old.
  db.exec("UPDATE dlq_events SET parked_at = now() - interval '3 hours' "
          "WHERE id = " +
          entry[3]);
  // The two resolved long ago are pruned: their record's bytes and their
  // actions go, the entry and its decision stay (docs/dlq.md).
  REQUIRE(test::wait_until([&] {
    return db.scalar<int>("SELECT count(*) FROM idempotency_keys") == 2 &&
           db.scalar<int>("SELECT count(*) FROM dlq_events WHERE pruned_at "
                          "IS NOT NULL") == 2;
  }));
  CHECK(db.scalar<int>("SELECT count(*) FROM dlq_events WHERE id IN (" +
                       entry[0] + ", " + entry[1] +
                       ") AND status = 'discarded' AND value = ''::bytea AND "
                       "key IS NULL") == 2);
  CHECK(db.scalar<int>("SELECT count(*) FROM dlq_events WHERE id IN (" +
                       entry[2] + ", " + entry[3] +
                       ") AND pruned_at IS NULL AND value <> ''::bytea") == 2);
  CHECK(db.scalar<int>("SELECT count(*) FROM dlq_actions WHERE dlq_id IN (" +
                       entry[0] + ", " + entry[1] + ")") == 0);
  CHECK(db.scalar<int>("SELECT count(*) FROM dlq_actions WHERE dlq_id = " +
                       entry[2]) == 1);
  // The janitor counts what it deleted after its transaction committed,
  // so the counters may trail the rows for a moment: wait for them, then
  // check they stop there.
  auto retention_counts = [&] {
    auto counters = test::counters(t.system(), t.root());
    return std::make_pair(
      counters[R"(retention_deleted_total{table="idempotency_keys"})"],
      counters[R"(retention_deleted_total{table="dlq_events"})"]);
  };
  CHECK(test::wait_until([&] {
    auto [keys, entries] = retention_counts();
    return keys >= 3 && entries >= 2;
  }));
  CHECK(retention_counts() ==
        std::make_pair(std::uint64_t{3}, std::uint64_t{2}));
  // A key past the retention is a new request: a new order. A recent one
  // is still a replay.
  auto [s1, b1] =
    test::post_json(t.url(), "/orders", test::order_body("c", 1, 1), "k1");
  CHECK(s1 == 201);
  CHECK(test::json_field(b1, "order_id") != first["k1"]);
  auto [s5, b5] =
    test::post_json(t.url(), "/orders", test::order_body("c", 1, 1), "k5");
  CHECK(s5 == 201);
  CHECK(test::json_field(b5, "order_id") == first["k5"]);
  CHECK(db.scalar<int>("SELECT count(*) FROM orders") == 6);
}

TEST_CASE("reads_that_wait_for_the_database_are_bounded_and_a_full_queue_"
          "answers_503_at_once") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.http.request_timeout_ms = 1500;
  kafka::embedded_broker broker{1, {{"orders", 6}}};
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  auto [s, b] =
    test::post_json(t.url(), "/orders", test::order_body("c", 1, 1));
  REQUIRE(s == 201);
  auto order = test::json_field(b, "order_id");
  std::vector<int> statuses(24, 0);
  {
    // A lock holds every trace: the front's statement timeout ends them;
    // past 16 waiting, the rest are answered at once.
    pqxx::connection blocker(db.dsn());
    pqxx::work lock(blocker);
    lock.exec("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE");
    std::vector<std::thread> clients;
    for (size_t i = 0; i < statuses.size(); ++i)
      clients.emplace_back([&, i] {
        httplib::Client cli(t.url());
        cli.set_read_timeout(60, 0);
        auto r = cli.Get(("/orders/" + order + "/trace").c_str());
        statuses[i] = r ? r->status : -1;
      });
    for (auto& c : clients)
      c.join(); // all answered while the lock is still held
  }
  auto refused =
    test::counters(t.system(), t.root())["http_blocking_refused_total"];
  CHECK(refused >= 8);
  CHECK(std::count(statuses.begin(), statuses.end(), 503) == 24);
  // Back to normal once the lock is gone.
  REQUIRE(test::wait_until([&] {
    httplib::Client cli(t.url());
    auto r = cli.Get(("/orders/" + order + "/trace").c_str());
    return r && r->status == 200;
  }));
}
