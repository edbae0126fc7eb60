// A crashed actor is restarted by its supervisor and resumes from durable
// state only: unsent outbox rows; the partition's committed offset.

#include "kafka/offsets.hpp"
#include "messages/tree_messages.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/messages/atoms.hpp>

#include <catch2/catch.hpp>

#include <iostream>
#include <set>
#include <thread>

using namespace ef;
using namespace std::chrono_literals;

namespace {

using actor_map = std::map<std::string, caf::actor>;

/// The root's supervision queries (children, stats of a subtree) are
/// internal, not part of eventforge_actor: ask it untyped.
caf::actor untyped(const eventforge_actor& root) {
  return caf::actor_cast<caf::actor>(root);
}

actor_map children_of(caf::actor_system& sys, const caf::actor& sup) {
  caf::scoped_actor self{sys};
  actor_map out;
  self->request(sup, 10s, children_atom::value)
    .receive([&](actor_map& m) { out = std::move(m); },
             [&](caf::error& e) { FAIL("children query: " << to_string(e)); });
  return out;
}

std::map<std::string, std::uint64_t> counters_of(caf::actor_system& sys,
                                                 const caf::actor& sup) {
  caf::scoped_actor self{sys};
  std::map<std::string, std::uint64_t> out;
  self->request(sup, 10s, stats_atom::value)
    .receive([&](std::map<std::string, std::uint64_t>& m) { out = m; },
             [&](caf::error& e) { FAIL("stats query: " << to_string(e)); });
  return out;
}

/// Fails `a` exactly as an exception escaping a handler would.
void crash(caf::actor_system& sys, const caf::actor& a) {
  caf::scoped_actor self{sys};
  self->send_exit(a, caf::make_error(caf::sec::runtime_error));
}

void post_orders(const std::string& url, int n, const std::string& customer) {
  for (int i = 0; i < n; ++i) {
    auto [status, body] =
      test::post_json(url, "/orders", test::order_body(customer, 1, 100 + i));
    REQUIRE(status == 201);
  }
}

void check_one_effect_per_consumer_per_event(test::database& db) {
  CHECK(db.scalar<int>(
          "SELECT count(*) FROM outbox o CROSS JOIN (VALUES ('fulfillment'), "
          "('billing')) c(consumer) WHERE (SELECT count(*) FROM "
          "business_effects b WHERE b.event_id = o.event_id AND b.consumer = "
          "c.consumer) <> 1") == 0);
}

} // namespace

TEST_CASE("killed_relay_shards_are_restarted_and_publish_the_unsent_rows") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  post_orders(t.url(), 50, "before");
  auto relays = children_of(t.system(), untyped(t.root())).at("relays");
  for (auto& [name, actor] : children_of(t.system(), relays))
    crash(t.system(), actor);
  post_orders(t.url(), 50, "after");
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  CHECK(counters_of(t.system(), untyped(t.root()))
          ["actor_restarts_total{kind=\"relay\",reason=\"exception\"}"] == 4);
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox") == 100);
  check_one_effect_per_consumer_per_event(db);
}

TEST_CASE("killed_partition_actors_resume_from_the_committed_offset_without_"
          "a_second_effect") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  post_orders(t.url(), 30, "warm-up");
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  auto top = children_of(t.system(), untyped(t.root()));
  std::set<caf::actor_addr> crashed;
  for (auto round = 0; round < 3; ++round) {
    // Kill every partition actor of both consumers while orders flow.
    for (auto name : {"consumer-billing", "consumer-fulfillment"}) {
      auto member = children_of(t.system(), top.at(name)).at("group-member");
      // The previous round's actors are replaced once their backoff passed
      // (until the member handled their exit, it still lists them).
      actor_map workers;
      REQUIRE(test::wait_until([&] {
        workers = children_of(t.system(), member);
        return workers.size() == static_cast<size_t>(cfg.kafka.partitions) &&
               std::none_of(workers.begin(), workers.end(), [&](auto& w) {
                 return crashed.count(w.second.address()) != 0;
               });
      }));
      for (auto& [_, w] : workers) {
        crashed.insert(w.address());
        crash(t.system(), w);
      }
    }
    post_orders(t.url(), 30, "round-" + std::to_string(round));
  }
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  // Every one of them was restarted by its group member, and counted.
  auto all = counters_of(t.system(), untyped(t.root()));
  std::string restarts;
  for (auto& [series, n] : all)
    if (series.rfind("actor_restarts_total", 0) == 0 && n > 0)
      restarts += series + " " + std::to_string(n) + "\n";
  INFO(restarts);
  CHECK(all["actor_restarts_total{kind=\"partition\",reason=\"exception\"}"] ==
        static_cast<std::uint64_t>(3 * 2 * cfg.kafka.partitions));
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox") == 120);
  check_one_effect_per_consumer_per_event(db);
  CHECK(-db.scalar<std::int64_t>("SELECT sum(balance_cents) FROM accounts") ==
        db.scalar<std::int64_t>("SELECT sum(total_cents) FROM orders"));
}

TEST_CASE("a_database_outage_longer_than_the_restart_budget_never_escalates_"
          "and_applies_every_held_record_once_when_it_returns") {
  test::database db;
  auto cfg = test::test_settings();
  // A budget the outage exhausts many times over if every failed database
  // call counted: four relays alone restart more often than twice in 10 s.
  cfg.supervisor.max_restarts = 2;
  cfg.supervisor.restart_window_s = 10;
  cfg.consumer.backoff_max_ms = 1000;
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  REQUIRE(test::warm_up_every_partition(t, db, cfg, broker.bootstrap_servers(),
                                        "warm-up"));
  auto before = db.scalar<int>("SELECT count(*) FROM outbox");
  {
    // Hold every consumer inside its transaction, so the records are in
    // flight (fetched, handed to the partition actors, not applied) when
    // the server stops.
    pqxx::connection blocker(db.dsn());
    pqxx::work lock(blocker);
    lock.exec("LOCK TABLE business_effects IN ACCESS EXCLUSIVE MODE");
    post_orders(t.url(), 20, "in-flight");
    REQUIRE(test::wait_until([&] {
      return db.scalar<int>("SELECT count(*) FROM outbox WHERE sent_at IS "
                            "NULL") == 0 &&
             db.scalar<int>("SELECT count(*) FROM pg_stat_activity WHERE "
                            "wait_event_type = 'Lock' AND datname = "
                            "current_database()") >= 2;
    }));
    db.server().stop(true); // a crash: every session breaks mid-transaction
  }
  // Long enough that the relays restart more often than the budget allows
  // in one window (each restart meets the outage again): counted, not
  // timed. Escalation would have happened here if outages were counted.
  auto outage_restarts = [&] {
    return t.metrics().sum("actor_restarts_total",
                           {{"kind", "relay"}, {"reason", "db_unavailable"}});
  };
  REQUIRE(test::wait_until([&] {
    return outage_restarts() >=
           static_cast<std::uint64_t>(4 * (cfg.supervisor.max_restarts + 1));
  }));
  db.server().start();
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox") == before + 20);
  check_one_effect_per_consumer_per_event(db);
  auto counters = counters_of(t.system(), untyped(t.root()));
  std::string restarts;
  for (auto& [series, n] : counters)
    if (series.rfind("actor_restarts_total", 0) == 0 && n > 0)
      restarts += series + " " + std::to_string(n) + "\n";
  INFO("restarts:\n" << restarts);
  std::cout << "restarts during the outage:\n" << restarts << std::flush;
  // Nothing escalated: no supervisor or group member was restarted, and no
  // partition actor crashed (each waited with its backoff).
  for (auto& [series, n] : counters)
    if (series.rfind("actor_restarts_total", 0) == 0)
      CHECK((n == 0 ||
             series.find("reason=\"db_unavailable\"") != std::string::npos));
  CHECK(counters["actor_restarts_total{kind=\"supervisor\",reason="
                 "\"exception\"}"] == 0);
  // Every actor that met the outage came back: new orders go through the
  // whole pipeline (relays publish them, consumers apply them).
  post_orders(t.url(), 10, "after");
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox") == before + 30);
  check_one_effect_per_consumer_per_event(db);
  // The tree is the same one: its root still answers.
  CHECK(children_of(t.system(), untyped(t.root())).size() >= 4);
}
