// Every bad HTTP input gets a clear error and writes nothing; idempotency
// keys; database outages answer 503 without partial writes.

#include "kafka/offsets.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>

#include <future>

using namespace ef;
using namespace std::chrono_literals;

namespace {

struct api_fixture {
  explicit api_fixture(int request_timeout_ms = 5000) {
    cfg.http.request_timeout_ms = request_timeout_ms;
    t = std::make_unique<test::tree>(
      cfg, endpoints{db.dsn(), broker.bootstrap_servers()});
  }
  test::database db;
  config::settings cfg = test::test_settings();
  kafka::embedded_broker broker{1, {{cfg.kafka.topic, cfg.kafka.partitions}}};
  std::unique_ptr<test::tree> t;

  /// Places an order as a client that needs it would: retried with its key
  /// until it is accepted (a short request timeout on a loaded machine may
  /// refuse the first tries: "nothing was written"). Returns its body.
  std::string place_until_accepted(const std::string& customer,
                                   const std::string& key) {
    std::pair<int, std::string> r;
    REQUIRE(test::wait_until([&] {
      r = test::post_json(t->url(), "/orders", test::order_body(customer, 1, 1),
                          key);
      return r.first == 201;
    }));
    return r.second;
  }

  int rows_written() {
    return db.scalar<int>("SELECT (SELECT count(*) FROM orders) + (SELECT "
                          "count(*) FROM order_items) + (SELECT count(*) FROM "
                          "outbox) + (SELECT count(*) FROM idempotency_keys)");
  }
};

} // namespace

TEST_CASE("bad_order_bodies_get_400_naming_the_field_and_write_nothing") {
  api_fixture f;
  struct bad {
    std::string body;
    std::string field;
  };
  std::string item = R"("sku":"a","price_cents":100)";
  for (
    auto& b : std::vector<bad>{
      {"{not json", "body"},
      {"[1,2]", "body"},
      {R"({"items":[{"sku":"a","qty":1,"price_cents":1}]})", "customer_id"},
      {R"({"customer_id":7,"items":[{"sku":"a","qty":1,"price_cents":1}]})",
       "customer_id"},
      {R"({"customer_id":"","items":[{"sku":"a","qty":1,"price_cents":1}]})",
       "customer_id"},
      {R"({"customer_id":"c"})", "items"},
      {R"({"customer_id":"c","items":{}})", "items"},
      {R"({"customer_id":"c","items":[]})", "items"},
      {R"({"customer_id":"c","items":[7]})", "items[0]"},
      {R"({"customer_id":"c","items":[{)" + item + "}]}", "items[0].qty"},
      {R"({"customer_id":"c","items":[{)" + item + R"(,"qty":"2"}]})",
       "items[0].qty"},
      {R"({"customer_id":"c","items":[{)" + item + R"(,"qty":2.5}]})",
       "items[0].qty"},
      {R"({"customer_id":"c","items":[{)" + item + R"(,"qty":0}]})",
       "items[0].qty"},
      {R"({"customer_id":"c","items":[{)" + item + R"(,"qty":-3}]})",
       "items[0].qty"},
      {R"({"customer_id":"c","items":[{"sku":"a","qty":1,"price_cents":-1}]})",
       "items[0].price_cents"},
      {R"({"customer_id":"c","items":[{"sku":"","qty":1,"price_cents":1}]})",
       "items[0].sku"},
      {R"({"customer_id":"c","items":[{"qty":1,"price_cents":1}]})",
       "items[0].sku"},
      {R"({"customer_id":"c","items":[{"sku":"a","qty":1,"price_cents":1}, {"sku":"b","qty":99999999999999999999,"price_cents":1}]})",
       "items[1].qty"},
    }) {
    auto [status, body] = test::post_json(f.t->url(), "/orders", b.body);
    INFO("request " << b.body << " answered " << status << " " << body);
    CHECK(status == 400);
    CHECK(test::json_field(body, "field") == b.field);
    CHECK_FALSE(test::json_field(body, "error").empty());
  }
  CHECK(f.rows_written() == 0);
  // The process is alive and still takes good orders.
  auto [status, body] =
    test::post_json(f.t->url(), "/orders", test::order_body("c", 1, 100));
  CHECK(status == 201);
}

TEST_CASE("oversized_body_wrong_content_type_and_unknown_orders_write_"
          "nothing") {
  api_fixture f;
  std::string huge = R"({"customer_id":"c","items":[)";
  while (huge.size() < 70 * 1024)
    huge += R"({"sku":"padding-padding-padding","qty":1,"price_cents":1},)";
  huge += R"({"sku":"a","qty":1,"price_cents":1}]})";
  auto [s413, b413] = test::post_json(f.t->url(), "/orders", huge);
  CHECK(s413 == 413);
  CHECK(test::json_field(b413, "field") == "body");

  auto [s415, b415] = test::post_json(
    f.t->url(), "/orders", test::order_body("c", 1, 1), "", "text/plain");
  CHECK(s415 == 415);
  CHECK(test::json_field(b415, "field") == "Content-Type");

  auto unknown = "0190b6a8-1234-7abc-8def-0123456789ab";
  auto [s404, b404] = test::post_json(
    f.t->url(), std::string("/orders/") + unknown + "/cancel", "");
  CHECK(s404 == 404);
  CHECK(test::json_field(b404, "field") == "order_id");
  auto [s404b, b404b] =
    test::post_json(f.t->url(), "/orders/not-a-uuid/cancel", "");
  CHECK(s404b == 404);
  httplib::Client cli(f.t->url());
  auto get = cli.Get((std::string("/orders/") + unknown).c_str());
  REQUIRE(get);
  CHECK(get->status == 404);
  CHECK(f.rows_written() == 0);
}

TEST_CASE("idempotency_key_retry_returns_the_same_order_and_another_body_is_"
          "409") {
  api_fixture f;
  auto body = test::order_body("c", 2, 1500);
  auto [s1, b1] = test::post_json(f.t->url(), "/orders", body, "key-1");
  auto [s2, b2] = test::post_json(f.t->url(), "/orders", body, "key-1");
  REQUIRE(s1 == 201);
  CHECK(s2 == 201);
  CHECK(test::json_field(b1, "order_id") == test::json_field(b2, "order_id"));
  CHECK(test::json_field(b1, "event_id") == test::json_field(b2, "event_id"));
  auto [s3, b3] = test::post_json(f.t->url(), "/orders",
                                  test::order_body("c", 3, 1500), "key-1");
  CHECK(s3 == 409);
  CHECK(test::json_field(b3, "field") == "Idempotency-Key");
  CHECK(f.db.scalar<int>("SELECT count(*) FROM orders") == 1);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM outbox") == 1);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM idempotency_keys") == 1);
}

TEST_CASE("cancel_writes_one_event_and_a_second_cancel_is_409") {
  api_fixture f;
  auto [s, b] =
    test::post_json(f.t->url(), "/orders", test::order_body("c", 1, 100));
  REQUIRE(s == 201);
  auto id = test::json_field(b, "order_id");
  auto [c1, cb1] = test::post_json(f.t->url(), "/orders/" + id + "/cancel", "");
  CHECK(c1 == 202);
  CHECK(test::json_field(cb1, "order_id") == id);
  auto [c2, cb2] = test::post_json(f.t->url(), "/orders/" + id + "/cancel", "");
  CHECK(c2 == 409);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM outbox WHERE order_id = '" + id +
                         "'") == 2);
}

TEST_CASE("database_down_answers_503_quickly_and_never_writes_half_an_order") {
  api_fixture f;
  auto [s0, b0] =
    test::post_json(f.t->url(), "/orders", test::order_body("c", 1, 100));
  REQUIRE(s0 == 201);
  f.db.server().stop(true); // crash the server
  auto t0 = std::chrono::steady_clock::now();
  auto [s1, b1] = test::post_json(f.t->url(), "/orders",
                                  test::order_body("c", 1, 100), "retry-me");
  auto took = std::chrono::steady_clock::now() - t0;
  INFO(b1);
  CHECK(s1 == 503);
  CHECK(took < 10s); // bounded by connect_timeout, not a hang
  f.db.server().start();
  // The client's keyed retry settles it once the database is back.
  std::pair<int, std::string> retry;
  REQUIRE(test::wait_until([&] {
    retry = test::post_json(f.t->url(), "/orders",
                            test::order_body("c", 1, 100), "retry-me");
    return retry.first == 201;
  }));
  CHECK(f.db.scalar<int>("SELECT count(*) FROM orders") == 2);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM outbox") == 2);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM order_items") == 2);
}

TEST_CASE("transaction_rolled_back_after_the_order_insert_leaves_no_order_"
          "no_outbox_row_and_publishes_nothing") {
  api_fixture f;
  // A test-only trigger fails the outbox insert, which runs after the order
  // and item inserts of the same transaction.
  f.db.exec(R"sql(
    CREATE FUNCTION fail_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.payload->>'customer_id' = 'doomed' THEN
        RAISE EXCEPTION 'injected outbox failure' USING ERRCODE = 'P0001';
      END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER fail_outbox BEFORE INSERT ON outbox
      FOR EACH ROW EXECUTE FUNCTION fail_outbox();)sql");
  auto [s, b] = test::post_json(f.t->url(), "/orders",
                                test::order_body("doomed", 1, 100), "k-doomed");
  INFO(b);
  CHECK(s == 500);
  CHECK(f.rows_written() == 0);
  // A good order afterwards flows through; the doomed one never appears.
  auto [s2, b2] =
    test::post_json(f.t->url(), "/orders", test::order_body("fine", 1, 100));
  REQUIRE(s2 == 201);
  REQUIRE(test::wait_until([&] {
    return f.db.scalar<int>("SELECT count(*) FROM processed_events") == 2;
  }));
  CHECK(f.db.scalar<int>("SELECT count(*) FROM orders WHERE customer_id = "
                         "'doomed'") == 0);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM business_effects") == 2);
  auto records = kafka::read_all(f.broker.bootstrap_servers(),
                                 f.cfg.kafka.topic, f.cfg.kafka.partitions);
  REQUIRE(records.size() == 1);
  CHECK(records[0].value.find("doomed") == std::string::npos);
}

TEST_CASE("a_table_locked_past_the_request_timeout_gets_answers_that_agree_"
          "with_the_database_for_a_create_and_a_cancel_without_a_key") {
  api_fixture f(1000);
  auto victim = test::json_field(
    f.place_until_accepted("to-cancel", "to-cancel"), "order_id");
  std::pair<int, std::string> create, cancel;
  {
    // Another session holds the orders table for longer than the request
    // timeout: neither command can be written in time.
    pqxx::connection blocker(f.db.dsn());
    pqxx::work lock(blocker);
    lock.exec("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE");
    auto c1 = std::async(std::launch::async, [&] {
      return test::post_json(f.t->url(), "/orders",
                             test::order_body("locked-out", 1, 1));
    });
    auto c2 = std::async(std::launch::async, [&] {
      return test::post_json(f.t->url(), "/orders/" + victim + "/cancel", "");
    });
    // Both are answered while the lock is still held (the old front
    // answered "nothing was written" here and committed them after the
    // release).
    REQUIRE(c1.wait_for(20s) == std::future_status::ready);
    REQUIRE(c2.wait_for(20s) == std::future_status::ready);
    create = c1.get();
    cancel = c2.get();
  } // the lock is released here
  // Each API worker answers its queue in order: once a new command of each
  // went through, nothing of the earlier ones is still on its way.
  for (int i = 0; i < 2 * f.cfg.api.workers; ++i)
    f.place_until_accepted("after", "after-" + std::to_string(i));
  INFO("create: " << create.first << " " << create.second);
  INFO("cancel: " << cancel.first << " " << cancel.second);
  // The answers: 503, and a fact, not a guess.
  CHECK(create.first == 503);
  CHECK(cancel.first == 503);
  CHECK(create.second.find("\"written\":false") != std::string::npos);
  CHECK(cancel.second.find("\"written\":false") != std::string::npos);
  // The database agrees: no order for the refused create, no cancel of the
  // victim, no outbox row of either.
  CHECK(f.db.scalar<int>("SELECT count(*) FROM orders WHERE customer_id = "
                         "'locked-out'") == 0);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM orders WHERE id = '" + victim +
                         "' AND cancel_requested_at IS NULL") == 1);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM outbox WHERE event_type = "
                         "'OrderCancelled'") == 0);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM orders") ==
        1 + 2 * f.cfg.api.workers);
  CHECK(test::counters(f.t->system(),
                       f.t->root())["api_commands_expired_total"] >= 2);
}
