// No accepted order is ever lost, even when the broker loses records: a
// restart on the embedded defaults (a new, empty in-process broker) and a log
// trimmed under running consumers. The outbox is the source of truth.

#include "kafka/broker_probe.hpp"
#include "kafka/offsets.hpp"
#include "kafka/outbox_producer.hpp"
#include "persistence/lock_classes.hpp"
#include "persistence/migrations.hpp"
#include "persistence/order_store.hpp"
#include "persistence/outbox_store.hpp"
#include "persistence/repair_store.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/embedded/verifier.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// Clients that place `orders` orders, each with its own Idempotency-Key,
/// pausing `pace` between orders, and retry every failed request with the
/// same key against whatever URL the current serve process has, as a real
/// client would across restarts.
class retrying_clients {
public:
  retrying_clients(int orders, int concurrency, std::chrono::milliseconds pace)
      : orders_(orders), pace_(pace) {
    for (int c = 0; c < concurrency; ++c)
      threads_.emplace_back([this] { run(); });
  }
  ~retrying_clients() { join(); }

  void point_at(const std::string& url) {
    std::lock_guard<std::mutex> guard{mtx_};
    url_ = url;
  }
  int accepted() const { return accepted_; }
  void join() {
    for (auto& t : threads_)
      if (t.joinable())
        t.join();
  }

private:
  std::string url() {
    std::lock_guard<std::mutex> guard{mtx_};
    return url_;
  }
  void run() {
    auto deadline = std::chrono::steady_clock::now() + 240s;
    for (int i = next_++; i < orders_; i = next_++) {
      auto body =
        test::order_body("cust-" + std::to_string(i % 23), 1 + i % 3, 100 + i);
      auto key = "no-loss-" + std::to_string(i);
      while (std::chrono::steady_clock::now() < deadline) {
        auto target = url();
        if (!target.empty() &&
            test::post_json(target, "/orders", body, key).first == 201) {
          ++accepted_;
          break;
        }
        std::this_thread::sleep_for(20ms);
      }
      std::this_thread::sleep_for(pace_);
    }
  }

  int orders_;
  std::chrono::milliseconds pace_;
  std::mutex mtx_;
  std::string url_;
  std::atomic<int> next_{0};
  std::atomic<int> accepted_{0};
  std::vector<std::thread> threads_;
};

std::vector<std::string> embedded_serve(const std::string& data_dir) {
  return {test::eventforge_binary(),
          "serve",
          "--http.port=0",
          "--database.data-dir=" + data_dir,
          "--kafka.session-timeout-ms=6000",
          "--kafka.fetch-wait-max-ms=20",
          "--shutdown.drain-timeout-ms=5000",
          "--log.level=info"};
}

/// Waits until the verifier finds every invariant holding (every event
/// applied once by every consumer, offsets at the log end).
bool settles(const config::settings& cfg, const std::string& dsn,
             const std::string& brokers, std::chrono::seconds limit = 120s) {
  return test::wait_until(
    [&] {
      try {
        return app::verify(cfg, dsn, brokers).ok();
      } catch (const std::exception&) {
        return false;
      }
    },
    limit);
}

} // namespace

TEST_CASE("serve_on_embedded_defaults_stopped_by_sigterm_then_sigkill_mid_"
          "stream_applies_every_accepted_order_once") {
  test::temp_dir dir;
  test::seed_cluster(dir.path + "/pg");
  auto log = dir.path + "/serve.log";
  constexpr int orders = 1500;
  retrying_clients clients(orders, 4, 20ms); // ~150 orders/s
  auto cfg = test::test_settings();
  std::string dsn, brokers;
  auto start = [&] {
    auto serve = std::make_unique<test::child_process>(
      embedded_serve(dir.path + "/pg"), log);
    auto ready = serve->await_line("ready");
    REQUIRE_FALSE(ready.empty());
    clients.point_at(test::ready_field(ready, "http"));
    dsn = test::ready_field(ready, "database");
    brokers = test::ready_field(ready, "kafka");
    return serve;
  };

  // Consumers are at work (they join ~3 s after a start) and orders keep
  // coming: `more` events applied since the last life began.
  auto applying = [&](long more) {
    auto applied = [&] {
      try {
        pqxx::connection c(dsn);
        pqxx::nontransaction t(c);
        return t.exec1("SELECT count(*) FROM processed_events")[0].as<long>();
      } catch (const std::exception&) {
        return 0L;
      }
    };
    auto goal = applied() + more;
    return test::wait_until([&] { return applied() >= goal; }, 120s) &&
           clients.accepted() < orders;
  };

  // Life 1: SIGTERM while orders stream in. The drain is bounded.
  auto serve = start();
  REQUIRE(applying(100));
  auto stop_asked = std::chrono::steady_clock::now();
  serve->signal(SIGTERM);
  CHECK(serve->wait() == 0);
  CHECK(std::chrono::steady_clock::now() - stop_asked < 15s);
  clients.point_at("");

  // Life 2: SIGKILL while orders stream in: nothing drains.
  serve = start();
  REQUIRE(applying(100));
  serve->signal(SIGKILL);
  CHECK(serve->wait() == 128 + SIGKILL);
  clients.point_at("");

  // Life 3: the clients finish, retrying what failed with the same keys.
  serve = start();
  clients.join();
  REQUIRE(clients.accepted() == orders);
  INFO("serve log: " << log);
  REQUIRE(settles(cfg, dsn, brokers));

  pqxx::connection c(dsn);
  pqxx::nontransaction t(c);
  auto scalar = [&](const std::string& sql) {
    return t.exec1(sql)[0].as<long>();
  };
  CHECK(scalar("SELECT count(*) FROM orders") == orders);
  CHECK(scalar("SELECT count(*) FROM idempotency_keys") == orders);
  for (auto consumer : {"fulfillment", "billing"})
    CHECK(scalar(std::string("SELECT count(*) FROM outbox o WHERE (SELECT "
                             "count(*) FROM business_effects b WHERE "
                             "b.event_id = o.event_id AND b.consumer = '") +
                 consumer + "') <> 1") == 0);
  // Every start met a new, empty broker: a start that found positions of the
  // previous life began a new epoch, and whatever a consumer had not applied
  // was published again.
  CHECK(scalar("SELECT count(*) FROM broker_epochs") >= 2);
  CHECK(-scalar("SELECT sum(balance_cents) FROM accounts") ==
        scalar("SELECT sum(total_cents) FROM orders"));
  serve->signal(SIGTERM);
  CHECK(serve->wait() == 0);
}

TEST_CASE("consumers_behind_a_trimmed_log_record_the_gap_and_the_outbox_"
          "republishes_it_applied_once_in_order") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.kafka.partitions = 1; // every record competes for one small log
  cfg.consumer.max_in_flight = 16;
  kafka::embedded_broker broker{1, {{"orders", 1}, {"orders.dlq", 1}}};
  auto brokers = broker.bootstrap_servers();
  test::tree t(cfg, {db.dsn(), brokers});
  auto place = [&](int n, const std::string& who) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      auto [status, reply] =
        test::post_json(t.url(), "/orders", test::order_body(who, 1, 10 + i));
      REQUIRE(status == 201);
      ids.push_back(test::json_field(reply, "order_id"));
    }
    return ids;
  };
  place(20, "warm-up");
  REQUIRE(test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));
  auto applied = kafka::read_all(brokers, cfg.kafka.topic, 1).front();

  // Hold the consumers inside their transactions while orders are published,
  // then let another writer push 8 MB through the 5 MiB log: the broker
  // trims the unread records under the consumers, as retention would.
  pqxx::connection blocker(db.dsn());
  pqxx::work hold(blocker);
  hold.exec("LOCK TABLE processed_events IN ACCESS EXCLUSIVE MODE");
  auto ids = place(300, "bulk");
  for (size_t i = 0; i < ids.size(); i += 5) // every fifth is cancelled
    REQUIRE(
      test::post_json(t.url(), "/orders/" + ids[i] + "/cancel", "").first ==
      202);
  REQUIRE(test::wait_until([&] {
    return db.scalar<int>("SELECT count(*) FROM outbox WHERE sent_at IS "
                          "NULL") == 0;
  }));
  // Copies of an applied event, padded: the consumers will suppress them.
  auto padded = nlohmann::json::parse(applied.value);
  padded["padding"] = std::string(200 * 1024, 'x');
  kafka::outbox_producer other(brokers, cfg.kafka.topic, 10000, "other");
  for (int i = 0; i < 40; ++i)
    REQUIRE(
      other.publish_raw(applied.key, padded.dump(), applied.headers).persisted);
  kafka::broker_probe probe(brokers, cfg.kafka.topic);
  auto low = probe.query_watermarks(0).low;
  for (auto consumer : {"fulfillment", "billing"})
    REQUIRE(probe.committed(std::string("eventforge.") + consumer, 1)[0] < low);
  hold.abort();

  REQUIRE(settles(cfg, db.dsn(), brokers));
  // Both consumers met the gap and recorded it; whichever came first queued
  // the events again (the other then found them already on their way).
  auto gaps = [&](const char* consumer) {
    return db.scalar<long>(
      std::string("SELECT count(*) FROM consumer_gaps WHERE consumer = '") +
      consumer + "' AND to_offset > from_offset");
  };
  CHECK(gaps("fulfillment") >= 1);
  CHECK(gaps("billing") >= 1);
  CHECK(db.scalar<long>("SELECT sum(at_risk) FROM consumer_gaps") >= 300);
  CHECK(db.scalar<long>("SELECT sum(events) FROM republish_log WHERE reason "
                        "= 'consumer_gap'") >= 300);
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox WHERE republish_count > "
                        "0") > 0);
  auto m = test::counters(t.system(), t.root());
  CHECK(m[R"(consumer_positions_lost_total{consumer="fulfillment"})"] >= 1);
  CHECK(m[R"(consumer_positions_lost_total{consumer="billing"})"] >= 1);
  // Exactly one effect per consumer and event, created before cancelled.
  CHECK(db.scalar<long>("SELECT count(*) FROM (SELECT consumer, event_id FROM "
                        "business_effects GROUP BY 1, 2 HAVING count(*) <> "
                        "1) d") == 0);
  CHECK(db.scalar<long>("SELECT count(*) FROM business_effects") ==
        2 * db.scalar<long>("SELECT count(*) FROM outbox"));
  CHECK(db.scalar<long>("SELECT count(*) FROM business_effects WHERE kind "
                        "LIKE '%skipped'") == 0);
}

TEST_CASE("a_database_set_up_with_other_relay_shards_refuses_to_start_naming_"
          "both_values") {
  test::database db;
  persistence::migrate(db.dsn());
  db.exec("INSERT INTO fixed_settings (key, value) VALUES ('relay.shards', "
          "'8')");
  kafka::embedded_broker broker{1, {{"orders", 6}}};
  auto [code, out] = test::run_command(
    test::eventforge_binary() + " serve --http.port=0 --database.url='" +
    db.dsn() + "' --kafka.brokers=" + broker.bootstrap_servers() +
    " --relay.shards=4");
  INFO(out);
  CHECK(code == 1);
  CHECK(out.find("relay.shards is 4") != std::string::npos);
  CHECK(out.find("relay.shards=8") != std::string::npos);
  CHECK(db.scalar<int>("SELECT count(*) FROM orders") == 0);
}

TEST_CASE("republish_command_counts_first_then_queues_what_a_consumer_never_"
          "applied_and_records_both") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.consumer.enabled = {"fulfillment"}; // billing is down
  kafka::embedded_broker broker{1, {{"orders", 6}, {"orders.dlq", 6}}};
  auto brokers = broker.bootstrap_servers();
  {
    test::tree t(cfg, {db.dsn(), brokers});
    for (int i = 0; i < 10; ++i)
      REQUIRE(
        test::post_json(t.url(), "/orders", test::order_body("rp", 1, 100 + i))
          .first == 201);
    REQUIRE(
      test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));
  }
  auto cli =
    test::eventforge_binary() + " republish --database.url='" + db.dsn() + "' ";
  // Bad input is refused and changes nothing.
  for (auto bad : {"--consumer nobody", "--since yesterday-ish",
                   "--from-seq 9 --to-seq 2"}) {
    auto [code, out] = test::run_command(cli + bad);
    INFO(bad << " printed " << out);
    CHECK(code != 0);
  }
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at IS NULL") ==
        0);
  auto [dry, dry_out] = test::run_command(cli + "--consumer billing --dry-run");
  INFO(dry_out);
  CHECK(dry == 0);
  CHECK(dry_out.find("would republish 10 event(s)") != std::string::npos);
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at IS NULL") ==
        0);
  // Fulfillment applied everything: nothing to do for it.
  auto [none, none_out] = test::run_command(cli + "--consumer fulfillment");
  CHECK(none_out.find("queued 0 event(s)") != std::string::npos);
  auto [real, real_out] = test::run_command(cli + "--consumer billing");
  INFO(real_out);
  CHECK(real == 0);
  CHECK(real_out.find("queued 10 event(s)") != std::string::npos);
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at IS NULL "
                        "AND republish_count = 1") == 10);
  CHECK(db.scalar<long>("SELECT count(*) FROM republish_log WHERE reason = "
                        "'operator' AND actor LIKE 'cli:%' AND consumer = "
                        "'billing'") == 2);
  // Billing comes back: the relays republish, both consumers end with one
  // effect per event (fulfillment suppresses the copies).
  cfg.consumer.enabled = {"fulfillment", "billing"};
  test::tree t(cfg, {db.dsn(), brokers});
  REQUIRE(test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));
  CHECK(db.scalar<long>("SELECT count(*) FROM business_effects WHERE consumer "
                        "= 'billing'") == 10);
  CHECK(db.scalar<long>("SELECT count(*) FROM business_effects WHERE consumer "
                        "= 'fulfillment'") == 10);
}

TEST_CASE("a_relay_marks_nothing_without_its_shard_lock_or_after_the_broker_"
          "epoch_moved_on") {
  test::database db;
  persistence::migrate(db.dsn());
  persistence::order_store orders(db.dsn(), 1);
  auto o = orders.create({"lock", {{"sku", 1, 100}}, "", "", ""});
  auto seq = db.scalar<std::int64_t>("SELECT seq FROM outbox");
  persistence::outbox_store relay(db.dsn(), 0);
  auto epoch = relay.current_epoch();
  // Never took the lock (or lost it with its session): no mark, an error.
  CHECK_THROWS_WITH(relay.mark_sent(epoch, {{seq, 0, 0}}),
                    Catch::Contains("no longer holds the shard lock"));
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at IS NULL") ==
        1);
  REQUIRE(relay.try_acquire_shard());
  // The broker lost its logs while the batch was in flight.
  persistence::repair_store(db.dsn()).begin_epoch("test: broker replaced");
  CHECK(relay.mark_sent(epoch, {{seq, 0, 0}}) ==
        persistence::mark_result::epoch_changed);
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at IS NULL") ==
        1);
  CHECK(relay.mark_sent(relay.current_epoch(), {{seq, 3, 42}}) ==
        persistence::mark_result::marked);
  CHECK(db.scalar<std::string>("SELECT epoch || '/' || kafka_partition || '/' "
                               "|| kafka_offset FROM outbox") == "2/3/42");
  (void)o;
}

TEST_CASE("a_mark_that_waited_for_an_epoch_change_sees_the_new_epoch_and_"
          "marks_nothing") {
  test::database db;
  persistence::migrate(db.dsn());
  persistence::order_store orders(db.dsn(), 1);
  orders.create({"race", {{"sku", 1, 100}}, "", "", ""});
  auto seq = db.scalar<std::int64_t>("SELECT seq FROM outbox");
  persistence::outbox_store relay(db.dsn(), 0);
  REQUIRE(relay.try_acquire_shard());
  auto epoch = relay.current_epoch();
  // An epoch change holds its exclusive lock (as repair_store::begin_epoch
  // does) while the relay, its batch acknowledged, comes to mark it.
  pqxx::connection changer(db.dsn());
  pqxx::work change(changer);
  change.exec_params("SELECT pg_advisory_xact_lock($1, 0)",
                     persistence::epoch_lock_class);
  change.exec("INSERT INTO broker_epochs (epoch, reason) SELECT max(epoch) + "
              "1, 'test: broker replaced' FROM broker_epochs");
  std::optional<persistence::mark_result> result;
  std::thread marker([&] { result = relay.mark_sent(epoch, {{seq, 0, 7}}); });
  // The mark is queued behind the lock; then the new epoch commits.
  bool waiting = test::wait_until([&] {
    return db.scalar<long>("SELECT count(*) FROM pg_stat_activity WHERE "
                           "wait_event = 'advisory'") == 1;
  });
  change.commit();
  marker.join();
  REQUIRE(waiting);
  // It must read the epoch after the lock is granted: the rows it would
  // have marked belong to a broker lifetime that is over.
  REQUIRE(result.has_value());
  CHECK(*result == persistence::mark_result::epoch_changed);
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at IS NULL") ==
        1);
}

TEST_CASE("a_drain_that_cannot_finish_stops_at_its_timeout_and_a_second_"
          "signal_stops_at_once") {
  test::database db;
  test::temp_dir dir;
  kafka::embedded_broker broker{1, {{"orders", 6}, {"orders.dlq", 6}}};
  auto cfg = test::test_settings();
  auto args = [&] {
    return std::vector<std::string>{test::eventforge_binary(),
                                    "serve",
                                    "--http.port=0",
                                    "--database.url=" + db.dsn(),
                                    "--kafka.brokers=" +
                                      broker.bootstrap_servers(),
                                    "--kafka.session-timeout-ms=6000",
                                    "--kafka.fetch-wait-max-ms=20",
                                    "--shutdown.drain-timeout-ms=3000",
                                    "--log.level=info"};
  };
  for (int second_signal = 0; second_signal < 2; ++second_signal) {
    test::child_process serve(args(), dir.path + "/serve.log");
    auto url = test::ready_field(serve.await_line("ready"), "http");
    REQUIRE_FALSE(url.empty());
    REQUIRE(
      test::post_json(url, "/orders", test::order_body("d", 1, 1)).first ==
      201);
    REQUIRE(test::wait_until(
      [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
    // Consumers stuck inside their transactions: the drain cannot finish.
    pqxx::connection blocker(db.dsn());
    pqxx::work hold(blocker);
    hold.exec("LOCK TABLE processed_events IN ACCESS EXCLUSIVE MODE");
    REQUIRE(
      test::post_json(url, "/orders", test::order_body("d", 1, 2)).first ==
      201);
    // Wait until a consumer actually holds the record, blocked on the lock:
    // only then can the drain not finish.
    // (A session waiting for the table, whatever its statement's text: the
    // consumer's arrives as an EXECUTE of its prepared statement.)
    REQUIRE(test::wait_until([&] {
      return db.scalar<long>(
               "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = "
               "l.relation WHERE NOT l.granted AND c.relname = "
               "'processed_events'") > 0;
    }));
    auto asked = std::chrono::steady_clock::now();
    serve.signal(SIGTERM);
    // The first signal is taken (two pending SIGTERMs would be one).
    REQUIRE_FALSE(serve.await_line("stopping").empty());
    if (second_signal) {
      serve.signal(SIGTERM);
      CHECK(serve.wait() == 1);
      CHECK(std::chrono::steady_clock::now() - asked < 2s);
    } else {
      // The drain gives up after 3 s; the worker blocked in the database
      // cannot stop either, so 5 s later the process stops at once.
      CHECK(serve.wait() == 1);
      auto took = std::chrono::steady_clock::now() - asked;
      CHECK(took >= 3s);
      CHECK(took < 15s);
    }
    hold.abort();
  }
  // Nothing lost: a last start applies what the stopped ones held.
  test::child_process serve(args(), dir.path + "/serve.log");
  REQUIRE_FALSE(serve.await_line("ready").empty());
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  CHECK(db.scalar<long>("SELECT count(*) FROM business_effects") ==
        2 * db.scalar<long>("SELECT count(*) FROM outbox"));
  serve.signal(SIGTERM);
  CHECK(serve.wait() == 0);
}

TEST_CASE("a_partition_whose_fetch_stops_silently_is_restarted_where_its_"
          "applied_records_end_and_every_event_is_applied_once") {
  test::database db;
  auto cfg = test::test_settings();
  // The injected stall is a pause behind the member's back; a parked
  // partition's announcement or recheck would resume it before the watchdog
  // could see it. The watchdog is for partitions that should be fetching.
  cfg.kafka.park_idle_ms = 0;
  kafka::embedded_broker broker{1, {{"orders", 6}, {"orders.dlq", 6}}};
  auto brokers = broker.bootstrap_servers();
  test::tree t(cfg, {db.dsn(), brokers});
  // Every partition fetched and committed first, so no start-up restart of
  // a fetch undoes the stall below.
  REQUIRE(test::warm_up_every_partition(t, db, cfg, brokers, "warm"));
  auto ends_before =
    kafka::log_end_offsets(brokers, cfg.kafka.topic, cfg.kafka.partitions);
  // Fulfillment's client stops fetching partition 0 without an error, and
  // its group member is not told: only its own watch can notice.
  t.faults().stall_fetch("fulfillment", 0);
  REQUIRE(test::wait_until([&] { return !t.faults().fetch_stall_armed(); }));
  for (int i = 0; i < 50; ++i) {
    REQUIRE(test::post_json(t.url(), "/orders", test::order_body("late", 1, 1))
              .first == 201);
    auto ends =
      kafka::log_end_offsets(brokers, cfg.kafka.topic, cfg.kafka.partitions);
    if (i >= 9 && ends[0] > ends_before[0])
      break;
  }
  REQUIRE(kafka::log_end_offsets(brokers, cfg.kafka.topic,
                                 cfg.kafka.partitions)[0] > ends_before[0]);
  // Within the wait: fed nothing for 10 s, then restarted.
  REQUIRE(test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));
  auto m = test::counters(t.system(), t.root());
  CHECK(m[R"(consumer_fetch_stalls_total{consumer="fulfillment"})"] >= 1);
  CHECK(m[R"(consumer_fetch_stalls_total{consumer="billing"})"] == 0);
  // Restarted exactly where its applied records ended: nothing came twice.
  CHECK(m[R"(consumer_duplicates_suppressed_total{consumer="fulfillment"})"] ==
        0);
  auto events = db.scalar<int>("SELECT count(*) FROM outbox");
  CHECK(db.scalar<int>("SELECT count(*) FROM processed_events WHERE "
                       "consumer = 'fulfillment'") == events);
  CHECK(db.scalar<int>("SELECT count(DISTINCT event_id) FROM "
                       "business_effects WHERE consumer = 'fulfillment'") ==
        events);
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects WHERE "
                       "consumer = 'fulfillment'") == events);
}

TEST_CASE("one_consumer_held_back_lets_the_other_apply_past_2_mib_per_"
          "partition_while_the_log_holds_the_lead_and_nothing_is_trimmed_"
          "unread") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.kafka.partitions = 1;                // every record in one 5 MiB log
  REQUIRE(cfg.relay.max_lead_bytes == -1); // derived from the log's size
  kafka::embedded_broker broker{1, {{"orders", 1}, {"orders.dlq", 1}}};
  auto brokers = broker.bootstrap_servers();
  test::tree t(
    cfg, {db.dsn(), brokers, kafka::embedded_broker::log_bytes_per_partition});
  // Orders of twenty items with long SKUs: about 4.4 KB a record.
  nlohmann::json items = nlohmann::json::array();
  for (int i = 0; i < 20; ++i)
    items.push_back(
      {{"sku", std::string(150, 'a' + i)}, {"qty", 1}, {"price_cents", 100}});
  auto place = [&](int n, const std::string& who) {
    for (int i = 0; i < n; ++i) {
      auto body = nlohmann::json{{"customer_id", who}, {"items", items}};
      REQUIRE(test::post_json(t.url(), "/orders", body.dump(),
                              who + "-" + std::to_string(i))
                .first == 201);
    }
  };
  place(5, "warm-up");
  REQUIRE(test::wait_until([&] { return test::quiescent(db, cfg, brokers); }));
  // Billing waits on its own table; fulfillment goes on.
  pqxx::connection blocker(db.dsn());
  pqxx::work hold(blocker);
  hold.exec("LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE");
  place(1100, "bulk"); // ~4.8 MB: more than the derived 4 MiB lead
  kafka::broker_probe probe(brokers, cfg.kafka.topic);
  auto lead_bytes = [&] {
    auto fulfillment = probe.committed("eventforge.fulfillment", 1)[0];
    auto billing = probe.committed("eventforge.billing", 1)[0];
    std::int64_t bytes = 0;
    for (auto& r : kafka::read_all(brokers, cfg.kafka.topic, 1))
      if (r.offset >= billing && r.offset < fulfillment)
        bytes += static_cast<std::int64_t>(r.value.size() + r.key.size());
    return bytes;
  };
  // Fulfillment applies what the relays publish until they wait at the
  // limit: well past the old fixed 2 MiB.
  long sent = 0, applied = 0, unsent = 0;
  bool settled = test::wait_until(
    [&] {
      sent = db.scalar<long>(
        "SELECT count(*) FROM outbox WHERE sent_at IS NOT NULL");
      unsent =
        db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at IS NULL");
      applied = db.scalar<long>("SELECT count(*) FROM processed_events WHERE "
                                "consumer = 'fulfillment'");
      return unsent > 0 && sent == applied;
    },
    120s);
  INFO("sent " << sent << ", unsent " << unsent << ", applied by fulfillment "
               << applied);
  REQUIRE(settled);
  auto lead = lead_bytes();
  std::cout << "held back: fulfillment ahead of billing by " << lead
            << " bytes (" << applied << " events applied, " << unsent
            << " kept in the outbox)" << std::endl;
  INFO("fulfillment ahead of billing by " << lead << " bytes");
  CHECK(lead > 2 * 1024 * 1024);
  CHECK(lead <= 5 * 1024 * 1024);
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at IS NULL") >
        0); // the outbox keeps the rest
  // Nothing billing has not read was trimmed: its next record is still in
  // the log.
  CHECK(probe.query_watermarks(0).low <=
        probe.committed("eventforge.billing", 1)[0]);
  hold.abort();
  REQUIRE(settles(cfg, db.dsn(), brokers));
  CHECK(db.scalar<long>("SELECT count(*) FROM consumer_gaps") == 0);
  CHECK(db.scalar<long>("SELECT count(*) FROM processed_events") ==
        2 * db.scalar<long>("SELECT count(*) FROM outbox"));
}
