#pragma once

// The DLQ tests' fixture: a tree on a private PostgreSQL cluster and the
// in-process broker, with the source topic and its DLQ topic, an admin token
// and helpers that make an event fail and read durable state.

#include "kafka/offsets.hpp"
#include "kafka/outbox_producer.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/config/options.hpp>

#include <catch2/catch.hpp>
#include <httplib.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ef::test {

/// `eventforge dlq list` without the groups' ages ("oldest N s"): what two
/// listings taken moments apart must agree on.
inline std::string without_ages(std::string listing) {
  const std::string age = ", oldest ";
  for (auto at = listing.find(age); at != std::string::npos;
       at = listing.find(age, at)) {
    auto end = listing.find(" s\n", at);
    if (end == std::string::npos)
      break;
    listing.erase(at, end + 2 - at);
  }
  return listing;
}

struct dlq_fixture {
  /// `retention_s` > 0: sent outbox rows, applied marks and resolved DLQ
  /// entries go after that many seconds, the janitor looking every 100 ms.
  explicit dlq_fixture(int max_attempts = 3,
                       std::vector<std::string> points = {}, int partitions = 1,
                       int delivery_timeout_ms = 30000, int retention_s = 0) {
    cfg.kafka.partitions = partitions;
    if (retention_s > 0) {
      cfg.retention.outbox_s = retention_s;
      cfg.retention.processed_events_s = retention_s;
      cfg.retention.dlq_resolved_s = retention_s;
      cfg.retention.interval_ms = 100;
    }
    // Also how long the DLQ handler waits before it finishes a replay left
    // "replaying" (its delivery timeout plus a second).
    cfg.kafka.delivery_timeout_ms = delivery_timeout_ms;
    cfg.consumer.max_attempts = max_attempts;
    cfg.consumer.backoff_initial_ms = 10;
    cfg.consumer.backoff_max_ms = 50;
    cfg.http.admin_token = "ops:s3cret";
    if (!points.empty()) {
      cfg.chaos.points = points;
      cfg.chaos.rate = 1.0;
      cfg.chaos.max_crashes_per_event = 1;
    }
    broker = std::make_unique<kafka::embedded_broker>(
      1, std::vector<kafka::embedded_broker::topic_spec>{
           {cfg.kafka.topic, partitions},
           {config::dlq_topic_of(cfg), partitions}});
    t = std::make_unique<test::tree>(
      cfg, endpoints{db.dsn(), broker->bootstrap_servers()});
  }

  std::string brokers() { return broker->bootstrap_servers(); }

  std::string place(const std::string& customer) {
    auto [s, b] =
      test::post_json(t->url(), "/orders", test::order_body(customer, 1, 1000));
    REQUIRE(s == 201);
    return test::json_field(b, "order_id");
  }

  void produce_raw(const std::string& key, const std::string& value) {
    kafka::outbox_producer p(brokers(), cfg.kafka.topic, 10000, "test");
    REQUIRE(p.publish_raw(key, value, {}).persisted);
  }

  int count(const std::string& sql) { return db.scalar<int>(sql); }

  void settle() {
    // Nothing unsent first, then the log ends: read the other way round,
    // a row published between the two readings is on neither.
    REQUIRE(test::wait_until([&] {
      if (db.scalar<int>("SELECT count(*) FROM outbox WHERE sent_at IS "
                         "NULL") != 0)
        return false;
      auto ends = kafka::log_end_offsets(brokers(), cfg.kafka.topic, 1);
      for (auto c : {"billing", "fulfillment"})
        if (kafka::committed_offsets(brokers(), std::string("eventforge.") + c,
                                     cfg.kafka.topic, 1) != ends)
          return false;
      return true;
    }));
  }

  /// An admin request with the right token; returns (status, body).
  std::pair<int, std::string> admin(const std::string& method,
                                    const std::string& path,
                                    const std::string& token = "s3cret") {
    httplib::Client cli(t->url());
    httplib::Headers h;
    if (!token.empty())
      h.emplace("Authorization", "Bearer " + token);
    auto res = method == "GET" ? cli.Get(path.c_str(), h)
                               : cli.Post(path.c_str(), h, "", "text/plain");
    REQUIRE(res);
    return {res->status, res->body};
  }

  /// Stops the tree and starts a new one on the same database and broker.
  void restart() {
    t.reset();
    t = std::make_unique<test::tree>(
      cfg, endpoints{db.dsn(), broker->bootstrap_servers()});
  }

  /// Produces every record of `topic` to it once more, headers and all: a
  /// reader that starts over at the log start, or a repair, meets them.
  void produce_again(const std::string& topic) {
    kafka::outbox_producer p(brokers(), topic, 10000, "test-again");
    for (auto& r : kafka::read_all(brokers(), topic, cfg.kafka.partitions))
      REQUIRE(p.publish_raw(r.key, r.value, r.headers).persisted);
  }

  void add_failing_trigger(const std::string& customer,
                           const std::string& sqlstate, int failures) {
    db.exec("CREATE SEQUENCE IF NOT EXISTS fail_" + customer +
            "; CREATE OR REPLACE FUNCTION fail_" + customer +
            "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF (SELECT "
            "customer_id FROM orders WHERE id = NEW.order_id) = '" +
            customer + "' AND nextval('fail_" + customer +
            "') <= " + std::to_string(failures) +
            " THEN RAISE EXCEPTION 'injected failure for " + customer +
            "' USING ERRCODE = '" + sqlstate +
            "'; END IF; RETURN NEW; END $$; CREATE TRIGGER fail_" + customer +
            " BEFORE INSERT ON business_effects FOR EACH ROW EXECUTE "
            "FUNCTION fail_" +
            customer + "()");
  }

  test::database db;
  config::settings cfg = test::test_settings();
  std::unique_ptr<kafka::embedded_broker> broker;
  std::unique_ptr<test::tree> t;
};

inline std::string header(const kafka::stored_record& r,
                          const std::string& name) {
  for (auto& [k, v] : r.headers)
    if (k == name)
      return v;
  return {};
}

} // namespace ef::test
