// Group commit in the API: commands that arrive together share one
// transaction, each gets its own answer, and a failing one never fails the
// others.

#include "messages/ids.hpp"
#include "persistence/migrations.hpp"
#include "persistence/order_store.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

#include <thread>

using namespace ef;

namespace {

/// Posts `bodies` concurrently; returns each (status, body) in order.
std::vector<std::pair<int, std::string>>
post_together(const std::string& url, const std::vector<std::string>& bodies) {
  std::vector<std::pair<int, std::string>> out(bodies.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < bodies.size(); ++i)
    clients.emplace_back(
      [&, i] { out[i] = test::post_json(url, "/orders", bodies[i]); });
  for (auto& c : clients)
    c.join();
  return out;
}

/// One API actor that commits exactly when `n` commands are gathered (the
/// wait is longer than any test), so the batch is deterministic.
config::settings batching_exactly(int n) {
  auto cfg = test::test_settings();
  cfg.api.workers = 1;
  cfg.api.batch_max = n;
  cfg.api.batch_wait_us = 60'000'000;
  return cfg;
}

} // namespace

TEST_CASE("one_transaction_of_mixed_commands_gives_each_its_own_outcome") {
  test::database db;
  persistence::migrate(db.dsn());
  persistence::order_store orders(db.dsn(), 4);
  create_order plain{"c", {{"book", 2, 500}, {"pen", 1, 100}}, "", "", ""};
  create_order keyed{"c", {{"book", 1, 500}}, "k-1", "fp-a", ""};
  create_order same_key_other_body{"c", {{"book", 9, 500}}, "k-1", "fp-b", ""};
  auto a = new_uuid_v7(), b = new_uuid_v7(), b2 = new_uuid_v7(),
       b3 = new_uuid_v7();
  std::vector<persistence::create_result> created;
  std::vector<persistence::cancel_result> cancelled;
  orders.write([&](persistence::order_writer& w) {
    created.push_back(w.create(plain, a, new_uuid_v7()));
    created.push_back(w.create(keyed, b, new_uuid_v7()));
    // The key was claimed earlier in this very transaction.
    created.push_back(w.create(keyed, b2, new_uuid_v7()));
    created.push_back(w.create(same_key_other_body, b3, new_uuid_v7()));
    cancelled.push_back(w.cancel(a, ""));
    cancelled.push_back(w.cancel(a, ""));
    cancelled.push_back(w.cancel(new_uuid_v7(), ""));
  });
  using cr = persistence::create_result;
  using xr = persistence::cancel_result;
  CHECK(created[0].outcome == cr::created);
  CHECK(created[1].outcome == cr::created);
  CHECK(created[2].outcome == cr::replayed);
  CHECK(created[2].order_id == b);
  CHECK(created[2].event_id == created[1].event_id);
  CHECK(created[3].outcome == cr::key_conflict);
  CHECK(cancelled[0].outcome == xr::cancelled);
  CHECK(cancelled[1].outcome == xr::already_cancelled);
  CHECK(cancelled[2].outcome == xr::not_found);
  // Durable state: two orders, their three items, three events, one key.
  CHECK(db.scalar<int>("SELECT count(*) FROM orders") == 2);
  CHECK(db.scalar<int>("SELECT count(*) FROM order_items") == 3);
  CHECK(db.scalar<std::string>("SELECT string_agg(sku || 'x' || qty, ',' "
                               "ORDER BY line) FROM order_items WHERE "
                               "order_id = '" +
                               a + "'") == "bookx2,penx1");
  CHECK(db.scalar<int>("SELECT total_cents FROM orders WHERE id = '" + a +
                       "'") == 1100);
  CHECK(db.scalar<std::string>("SELECT string_agg(event_type, ',' ORDER BY "
                               "seq) FROM outbox") ==
        "OrderCreated,OrderCreated,OrderCancelled");
  CHECK(db.scalar<std::string>("SELECT payload->>'total_cents' FROM outbox "
                               "WHERE event_type = 'OrderCancelled'") ==
        "1100");
  CHECK(db.scalar<int>("SELECT count(*) FROM idempotency_keys") == 1);
  // One transaction wrote them all.
  CHECK(db.scalar<int>("SELECT count(DISTINCT xmin::text) FROM (SELECT xmin "
                       "FROM orders UNION ALL SELECT xmin FROM outbox) t") ==
        1);
}

TEST_CASE("concurrent_orders_share_one_commit_and_each_gets_its_own_answer") {
  test::database db;
  auto cfg = batching_exactly(8);
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  std::vector<std::string> bodies;
  for (int i = 0; i < 8; ++i)
    bodies.push_back(test::order_body("c" + std::to_string(i), 1, 100 + i));
  auto answers = post_together(t.url(), bodies);
  std::set<std::string> ids;
  for (size_t i = 0; i < answers.size(); ++i) {
    REQUIRE(answers[i].first == 201);
    auto id = test::json_field(answers[i].second, "order_id");
    ids.insert(id);
    // Each answer names the order its own request created.
    CHECK(db.scalar<std::string>("SELECT customer_id || '/' || total_cents "
                                 "FROM orders WHERE id = '" +
                                 id + "'") ==
          "c" + std::to_string(i) + "/" + std::to_string(100 + i));
  }
  CHECK(ids.size() == 8);
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox") == 8);
  CHECK(db.scalar<int>("SELECT count(DISTINCT xmin::text) FROM orders") == 1);
  // Still the pipeline's input: every event is applied.
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }));
  CHECK(db.scalar<int>("SELECT count(*) FROM business_effects") == 16);
}

TEST_CASE("a_command_the_database_rejects_fails_alone_its_batch_mates_"
          "commit") {
  test::database db;
  auto cfg = batching_exactly(8);
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  // A rule the API does not know about, e.g. added by a later migration.
  db.exec(R"sql(
    CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'customer poison is blocked'; END $$;
    CREATE TRIGGER refuse_poison BEFORE INSERT ON orders FOR EACH ROW
      WHEN (NEW.customer_id = 'poison') EXECUTE FUNCTION refuse_poison())sql");
  std::vector<std::string> bodies;
  for (int i = 0; i < 8; ++i)
    bodies.push_back(
      test::order_body(i == 3 ? "poison" : "c" + std::to_string(i), 1, 100));
  auto answers = post_together(t.url(), bodies);
  for (size_t i = 0; i < answers.size(); ++i) {
    if (i == 3) {
      CHECK(answers[i].first == 500);
      CHECK(test::json_field(answers[i].second, "code") == "internal");
      CHECK(answers[i].second.find("poison") == std::string::npos);
    } else {
      CHECK(answers[i].first == 201);
    }
  }
  CHECK(db.scalar<int>("SELECT count(*) FROM orders") == 7);
  CHECK(db.scalar<int>("SELECT count(*) FROM orders WHERE customer_id = "
                       "'poison'") == 0);
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox") == 7);
  CHECK(db.scalar<int>("SELECT count(*) FROM order_items") == 7);
}
