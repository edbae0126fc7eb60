// Every bad HTTP input gets a clear error and writes nothing; idempotency
// keys; database outages answer 503 without partial writes.

#include "kafka/offsets.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>

using namespace ef;
using namespace std::chrono_literals;

namespace {

struct api_fixture {
  test::database db;
  config::settings cfg = test::test_settings();
  kafka::embedded_broker broker{1, {{cfg.kafka.topic, cfg.kafka.partitions}}};
  test::tree t{cfg, {db.dsn(), broker.bootstrap_servers()}};

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
    auto [status, body] = test::post_json(f.t.url(), "/orders", b.body);
    INFO("request " << b.body << " answered " << status << " " << body);
    CHECK(status == 400);
    CHECK(test::json_field(body, "field") == b.field);
    CHECK_FALSE(test::json_field(body, "error").empty());
  }
  CHECK(f.rows_written() == 0);
  // The process is alive and still takes good orders.
  auto [status, body] =
    test::post_json(f.t.url(), "/orders", test::order_body("c", 1, 100));
  CHECK(status == 201);
}

TEST_CASE("oversized_body_wrong_content_type_and_unknown_orders_write_"
          "nothing") {
  api_fixture f;
  std::string huge = R"({"customer_id":"c","items":[)";
  while (huge.size() < 70 * 1024)
    huge += R"({"sku":"padding-padding-padding","qty":1,"price_cents":1},)";
  huge += R"({"sku":"a","qty":1,"price_cents":1}]})";
  auto [s413, b413] = test::post_json(f.t.url(), "/orders", huge);
  CHECK(s413 == 413);
  CHECK(test::json_field(b413, "field") == "body");

  auto [s415, b415] = test::post_json(
    f.t.url(), "/orders", test::order_body("c", 1, 1), "", "text/plain");
  CHECK(s415 == 415);
  CHECK(test::json_field(b415, "field") == "Content-Type");

  auto unknown = "0190b6a8-1234-7abc-8def-0123456789ab";
  auto [s404, b404] = test::post_json(
    f.t.url(), std::string("/orders/") + unknown + "/cancel", "");
  CHECK(s404 == 404);
  CHECK(test::json_field(b404, "field") == "order_id");
  auto [s404b, b404b] =
    test::post_json(f.t.url(), "/orders/not-a-uuid/cancel", "");
  CHECK(s404b == 404);
  httplib::Client cli(f.t.url());
  auto get = cli.Get((std::string("/orders/") + unknown).c_str());
  REQUIRE(get);
  CHECK(get->status == 404);
  CHECK(f.rows_written() == 0);
}

TEST_CASE("idempotency_key_retry_returns_the_same_order_and_another_body_is_"
          "409") {
  api_fixture f;
  auto body = test::order_body("c", 2, 1500);
  auto [s1, b1] = test::post_json(f.t.url(), "/orders", body, "key-1");
  auto [s2, b2] = test::post_json(f.t.url(), "/orders", body, "key-1");
  REQUIRE(s1 == 201);
  CHECK(s2 == 201);
  CHECK(test::json_field(b1, "order_id") == test::json_field(b2, "order_id"));
  CHECK(test::json_field(b1, "event_id") == test::json_field(b2, "event_id"));
  auto [s3, b3] = test::post_json(f.t.url(), "/orders",
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
    test::post_json(f.t.url(), "/orders", test::order_body("c", 1, 100));
  REQUIRE(s == 201);
  auto id = test::json_field(b, "order_id");
  auto [c1, cb1] = test::post_json(f.t.url(), "/orders/" + id + "/cancel", "");
  CHECK(c1 == 202);
  CHECK(test::json_field(cb1, "order_id") == id);
  auto [c2, cb2] = test::post_json(f.t.url(), "/orders/" + id + "/cancel", "");
  CHECK(c2 == 409);
  CHECK(f.db.scalar<int>("SELECT count(*) FROM outbox WHERE order_id = '" + id +
                         "'") == 2);
}

TEST_CASE("database_down_answers_503_quickly_and_never_writes_half_an_order") {
  api_fixture f;
  auto [s0, b0] =
    test::post_json(f.t.url(), "/orders", test::order_body("c", 1, 100));
  REQUIRE(s0 == 201);
  f.db.server().stop(true); // crash the server
  auto t0 = std::chrono::steady_clock::now();
  auto [s1, b1] = test::post_json(f.t.url(), "/orders",
                                  test::order_body("c", 1, 100), "retry-me");
  auto took = std::chrono::steady_clock::now() - t0;
  INFO(b1);
  CHECK(s1 == 503);
  CHECK(took < 10s); // bounded by connect_timeout, not a hang
  f.db.server().start();
  // The client's keyed retry settles it once the database is back.
  std::pair<int, std::string> retry;
  REQUIRE(test::wait_until([&] {
    retry = test::post_json(f.t.url(), "/orders", test::order_body("c", 1, 100),
                            "retry-me");
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
  auto [s, b] = test::post_json(f.t.url(), "/orders",
                                test::order_body("doomed", 1, 100), "k-doomed");
  INFO(b);
  CHECK(s == 500);
  CHECK(f.rows_written() == 0);
  // A good order afterwards flows through; the doomed one never appears.
  auto [s2, b2] =
    test::post_json(f.t.url(), "/orders", test::order_body("fine", 1, 100));
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
