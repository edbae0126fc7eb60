// EventForge embedded in another CAF application: the host's own actors talk
// to the tree through the handle ef::start() returns.

#include "actors/order_validation.hpp"
#include "persistence/order_store.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/actors/applied.hpp>
#include <eventforge/config/logging.hpp>
#include <eventforge/embedded/instance.hpp>
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/interfaces.hpp>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>

#include <fstream>
#include <mutex>
#include <sstream>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// A sink that keeps EventForge's lines for the test to read. Actors write
/// from their own threads, possibly while the test reads (a supervisor logs
/// a crash as services go away), so the text is read under the lock that
/// spdlog's base_sink takes for every line it writes.
class captured_lines : public spdlog::sinks::base_sink<std::mutex> {
public:
  std::string text() {
    std::lock_guard<std::mutex> guard{mutex_};
    return text_;
  }
  void clear() {
    std::lock_guard<std::mutex> guard{mutex_};
    text_.clear();
  }

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    text_.append(line.data(), line.size());
  }
  void flush_() override {}

private:
  std::string text_;
};

/// Gives EventForge's logger a sink of `lines` alone.
void capture_into(const std::shared_ptr<captured_lines>& lines) {
  ef::log::use(std::make_shared<spdlog::logger>(ef::log::logger_name, lines));
}

using place_atom = caf::atom_constant<caf::atom("place")>;

/// A host actor: places an order with EventForge, then reads it back, and
/// reports (order_id, status) to whoever asked.
caf::behavior shop_clerk(caf::event_based_actor* self,
                         eventforge_actor eventforge) {
  return {
    [=](place_atom, std::string customer) {
      auto rp = self->make_response_promise();
      create_order cmd{customer, {{"book", 2, 1250}}, "", "", ""};
      self->request(eventforge, 10s, std::move(cmd))
        .then(
          [=](order_accepted& ok) mutable {
            self->request(eventforge, 10s, get_order{ok.order_id})
              .then([=](order_view& v) mutable { rp.deliver(ok.order_id, v); },
                    [=](caf::error& e) mutable { rp.deliver(e); });
          },
          [=](caf::error& e) mutable { rp.deliver(e); });
      return rp;
    },
  };
}

} // namespace

TEST_CASE("host_application_actors_place_and_read_orders_through_the_"
          "embedded_tree") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  caf::actor_system_config host_cfg;
  ef::configure_actor_system(host_cfg);
  caf::actor_system host{host_cfg};
  auto root = ef::start(host, cfg, {db.dsn(), broker.bootstrap_servers()});
  auto clerk = host.spawn(shop_clerk, root);
  std::string order_id;
  order_view view;
  {
    caf::scoped_actor self{host};
    self->request(clerk, 20s, place_atom::value, std::string("host-customer"))
      .receive(
        [&](std::string& id, order_view& v) {
          order_id = id;
          view = v;
        },
        [&](caf::error& e) { FAIL("host actor got " << to_string(e)); });
    // Invalid commands from a host actor are refused like bad HTTP input,
    // and the registered error category names the cause.
    self->request(root, 10s, create_order{"c", {}, "", "", ""})
      .receive([&](order_accepted&) { FAIL("empty order accepted"); },
               [&](caf::error& e) {
                 CHECK(e.category() == api_error_category());
                 CHECK(e.code() == static_cast<uint8_t>(api_errc::invalid));
                 CHECK(host.render(e).rfind("ef_api: invalid (items: ", 0) ==
                       0);
               });
    // The root answers every other message of its typed interface too: the
    // handle is a cast, so this is what keeps it honest.
    self->request(root, 10s, dlq_command{dlq_verb::list, 0, "", ""})
      .receive([&](dlq_reply& r) { CHECK(r.json == "[]"); },
               [&](caf::error& e) { FAIL("dlq list: " << host.render(e)); });
    self->request(root, 10s, cancel_order{"not-a-uuid", ""})
      .receive([&](cancel_accepted&) { FAIL("cancelled a missing order"); },
               [&](caf::error& e) {
                 CHECK(e.code() == static_cast<uint8_t>(api_errc::not_found));
               });
  }
  REQUIRE_FALSE(order_id.empty());
  // The view is typed: a host needs no JSON parser to read it.
  CHECK(view.order_id == order_id);
  CHECK(view.customer_id == "host-customer");
  REQUIRE(view.items.size() == 1);
  CHECK(view.items[0].sku == "book");
  CHECK(view.items[0].qty == 2);
  CHECK(view.total_cents == 2500);
  REQUIRE(view.events.size() == 1);
  CHECK(view.events[0].event_type == "OrderCreated");
  REQUIRE(test::wait_until([&] {
    return db.scalar<int>("SELECT count(*) FROM business_effects WHERE "
                          "order_id = '" +
                          order_id + "'") == 2;
  }));
  CHECK(db.scalar<int>("SELECT count(*) FROM orders") == 1);
  CHECK(db.scalar<std::int64_t>("SELECT balance_cents FROM accounts WHERE "
                                "customer_id = 'host-customer'") == -2500);
  CHECK(ef::drain(host, root, 20s));
  CHECK(ef::counters(host, root)["api_orders_total{outcome=\"created\"}"] == 1);
  {
    // The host stops the tree alone and waits for it; its own actors (the
    // clerk) keep running, so await_all_actors_done is no way to wait.
    caf::scoped_actor self{host};
    self->monitor(root);
    caf::anon_send_exit(root, caf::exit_reason::user_shutdown);
    bool down = false;
    self->receive([&](caf::down_msg& d) { down = d.source == root.address(); },
                  caf::after(30s) >> [] {});
    CHECK(down);
    // The clerk is still there and still answers (with EventForge's error,
    // now that the tree is gone).
    self->request(clerk, 20s, place_atom::value, std::string("late"))
      .receive([&](std::string&, order_view&) { FAIL("tree still up"); },
               [&](caf::error&) {});
  }
  caf::anon_send_exit(clerk, caf::exit_reason::user_shutdown);
}

TEST_CASE("drain_names_the_group_members_that_could_not_apply_what_they_"
          "hold_and_succeeds_once_they_can") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.shutdown.drain_timeout_ms = 1000;
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  // Every consumer's transaction writes business_effects: while another
  // session holds the table, each partition actor waits inside its
  // transaction with the record in flight, and its group member cannot
  // finish a drain.
  pqxx::connection blocker(db.dsn());
  pqxx::work lock(blocker);
  lock.exec("LOCK TABLE business_effects IN ACCESS EXCLUSIVE MODE");
  auto [status, body] =
    test::post_json(t.url(), "/orders", test::order_body("drainer", 1, 100));
  REQUIRE(status == 201);
  auto waiting = [&] {
    // Both consumers' sessions wait for the lock (pg_stat_activity).
    return db.scalar<int>("SELECT count(*) FROM pg_stat_activity WHERE "
                          "wait_event_type = 'Lock' AND datname = "
                          "current_database()") >= 2;
  };
  REQUIRE(test::wait_until(waiting, 30s));
  auto report = ef::drain(t.system(), t.root(), 10s);
  CHECK_FALSE(report.drained);
  std::string all;
  for (auto& n : report.not_drained)
    all += n + "\n";
  INFO("not drained:\n" << all);
  for (auto& c : cfg.consumer.enabled)
    CHECK(
      all.find("consumer-" + c + "/group-member: no answer within 1000 ms") !=
      std::string::npos);
  // Relays, API workers and the DLQ handler drained: only the two members.
  CHECK(report.not_drained.size() == cfg.consumer.enabled.size());
  lock.abort(); // releases the table: the held records are applied
  REQUIRE(test::wait_until([&] {
    return db.scalar<int>("SELECT count(*) FROM business_effects") ==
           static_cast<int>(cfg.consumer.enabled.size());
  }));
  auto again = ef::drain(t.system(), t.root(), 10s);
  CHECK(again.drained);
  CHECK(again.not_drained.empty());
  t.stop();
}

TEST_CASE("a_reused_idempotency_key_with_another_body_through_the_typed_root_"
          "is_refused_and_writes_nothing") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  caf::scoped_actor self{t.system()};
  auto send = [&](const create_order& cmd) {
    std::optional<order_accepted> ok;
    caf::error err;
    self->request(t.root(), 10s, cmd)
      .receive([&](order_accepted& a) { ok = a; },
               [&](caf::error& e) { err = e; });
    return std::make_pair(ok, err);
  };
  // No fingerprint set by the caller: the API actor computes it.
  create_order first{"typed", {{"book", 2, 1500}}, "typed-key", "", ""};
  auto [a, a_err] = send(first);
  REQUIRE(a);
  CHECK_FALSE(a->replayed);
  // The same request again: the same order.
  auto [b, b_err] = send(first);
  REQUIRE(b);
  CHECK(b->replayed);
  CHECK(b->order_id == a->order_id);
  // The same key with another body: refused, as HTTP refuses it with 409.
  auto other = first;
  other.items[0].qty = 3;
  auto [c, c_err] = send(other);
  CHECK_FALSE(c);
  CHECK(c_err.category() == api_error_category());
  CHECK(c_err.code() == static_cast<uint8_t>(api_errc::conflict));
  CHECK(db.scalar<int>("SELECT count(*) FROM orders") == 1);
  CHECK(db.scalar<int>("SELECT count(*) FROM outbox") == 1);
  CHECK(db.scalar<std::string>("SELECT request_fingerprint FROM "
                               "idempotency_keys WHERE key = 'typed-key'") ==
        request_fingerprint(first));
  CHECK(db.scalar<int>("SELECT sum(qty)::int FROM order_items") == 2);
}

TEST_CASE("a_typed_hosts_traceparent_or_fingerprint_that_text_cannot_hold_is_"
          "refused_naming_it_and_the_rest_of_its_batch_commits") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.api.workers = 1; // one worker: the requests share its batches
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  caf::scoped_actor self{t.system()};
  auto good = [](const std::string& customer) {
    return create_order{customer, {{"book", 1, 100}}, "", "", ""};
  };
  std::vector<std::pair<create_order, std::string>> bad;
  auto with = [&](const std::string& field, const std::string& value) {
    auto cmd = good("bad-" + std::to_string(bad.size()));
    if (field == "traceparent") {
      cmd.traceparent = value;
    } else {
      cmd.idempotency_key = "key-" + std::to_string(bad.size());
      cmd.request_fingerprint = value;
    }
    bad.emplace_back(cmd, field);
  };
  with("traceparent", "00-\xff\xfe" + std::string(51, 'a'));
  with("traceparent", std::string("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7"
                                  "169203331-01\0",
                                  56));
  with("request_fingerprint", "\xc3\x28 not utf-8");
  with("request_fingerprint", std::string("abc\0def", 7));
  // Good and bad interleaved, all sent before any answer is read.
  std::vector<decltype(self->request(t.root(), 10s, good("")))> answers;
  std::vector<std::string> expect_field;
  for (auto& [cmd, field] : bad) {
    answers.push_back(self->request(t.root(), 10s, good("good")));
    expect_field.push_back("");
    answers.push_back(self->request(t.root(), 10s, cmd));
    expect_field.push_back(field);
  }
  for (size_t i = 0; i < answers.size(); ++i) {
    INFO("request " << i << ", expected field: " << expect_field[i]);
    answers[i].receive(
      [&](order_accepted&) { CHECK(expect_field[i].empty()); },
      [&](caf::error& e) {
        CHECK(e.category() == api_error_category());
        CHECK(e.code() == static_cast<uint8_t>(api_errc::invalid));
        CHECK(e.context().match_element<std::string>(0));
        if (e.context().match_element<std::string>(0))
          CHECK(e.context().get_as<std::string>(0) == expect_field[i]);
      });
  }
  // Every good order committed, no bad one wrote anything, and no API
  // worker crashed on the way.
  CHECK(db.scalar<int>("SELECT count(*) FROM orders WHERE customer_id = "
                       "'good'") == 4);
  CHECK(db.scalar<int>("SELECT count(*) FROM orders") == 4);
  CHECK(db.scalar<int>("SELECT count(*) FROM idempotency_keys") == 0);
  for (auto& [series, n] : test::counters(t.system(), t.root()))
    if (series.rfind("actor_restarts_total", 0) == 0)
      CHECK(n == 0);
}

TEST_CASE("the_files_a_hosts_settings_name_are_read_by_start_and_the_http_"
          "front_never_ignored") {
  test::database db;
  test::temp_dir dir;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  endpoints ep{db.dsn(), broker.bootstrap_servers()};
  // Properties a host names in a file, as a command line would: read, so a
  // CA file that cannot be read stops the start, naming the property.
  std::ofstream(dir.path + "/kafka.properties")
    << "security.protocol=ssl\nssl.ca.location=" << dir.path
    << "/missing-ca.pem\n";
  cfg.kafka.properties_file = dir.path + "/kafka.properties";
  CHECK_THROWS_WITH(test::tree(cfg, ep), Catch::Contains("ssl.ca.location"));
  cfg.kafka.properties_file = dir.path + "/nowhere.properties";
  CHECK_THROWS_WITH(test::tree(cfg, ep),
                    Catch::Contains("cannot read kafka.properties-file"));
  // An admin token a host keeps in a file guards the admin endpoints.
  cfg.kafka.properties_file.clear();
  std::ofstream(dir.path + "/admin.token") << "ops:from-a-file\n";
  cfg.http.admin_token_file = dir.path + "/admin.token";
  test::tree t(cfg, ep);
  httplib::Client cli(t.url());
  auto with = cli.Get("/admin/dlq", {{"Authorization", "Bearer from-a-file"}});
  REQUIRE(with);
  CHECK(with->status == 200);
  auto without = cli.Get("/admin/dlq", {{"Authorization", "Bearer other"}});
  REQUIRE(without);
  CHECK(without->status == 403);
}

TEST_CASE("await_applied_returns_once_everything_is_applied_and_names_what_"
          "is_missing_when_it_times_out") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  endpoints where{db.dsn(), broker.bootstrap_servers()};
  {
    test::tree t(cfg, where);
    REQUIRE(test::post_json(t.url(), "/orders", test::order_body("aw", 1, 100))
              .first == 201);
    auto done = await_applied(cfg, where, 60s);
    CHECK(done.applied);
    CHECK(done.gap.empty());
    // What it promises: marks and offsets are all there.
    CHECK(db.scalar<int>("SELECT count(*) FROM processed_events") ==
          static_cast<int>(cfg.consumer.enabled.size()));
  }
  // With the tree stopped, an order written straight to the database stays
  // unpublished: the wait ends at its timeout and says why.
  persistence::order_store(db.dsn(), cfg.relay.shards)
    .create({"aw-late", {{"sku", 1, 100}}, "", "", ""});
  auto late = await_applied(cfg, where, 300ms, 50ms);
  CHECK_FALSE(late.applied);
  CHECK(late.gap == "outbox: 1 unsent");
}

TEST_CASE("a_hosts_log_settings_govern_eventforges_lines_only_and_json_comes_"
          "from_the_public_header") {
  test::database db;
  auto cfg = test::test_settings();
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  endpoints where{db.dsn(), broker.bootstrap_servers()};
  // The host gives EventForge's logger a sink of its own.
  auto lines = std::make_shared<captured_lines>();
  capture_into(lines);
  spdlog::default_logger()->set_level(spdlog::level::info);
  auto run = [&](const std::string& level, const std::string& format) {
    lines->clear();
    cfg.log.level = level;
    cfg.log.format = format;
    test::tree t(cfg, where);
    REQUIRE(test::post_json(t.url(), "/orders", test::order_body("lg", 1, 100))
              .first == 201);
    REQUIRE(await_applied(cfg, where, 60s).applied);
    t.stop();
    return lines->text();
  };
  // [log] level=warn: none of EventForge's info lines (a tree that starts
  // and applies an order writes several at info).
  auto quiet = run("warn", "text");
  CHECK(quiet.find("[info]") == std::string::npos);
  // The host's own logger keeps its level.
  CHECK(spdlog::default_logger()->level() == spdlog::level::info);
  // [log] level=info, format=json: every line one JSON object.
  auto json_lines = run("info", "json");
  std::istringstream in(json_lines);
  std::string line;
  int info_lines = 0;
  while (std::getline(in, line)) {
    INFO(line);
    auto j = nlohmann::json::parse(line);
    CHECK(j.contains("ts"));
    CHECK(j.contains("msg"));
    info_lines += j.value("level", "") == "info";
  }
  CHECK(info_lines > 0);
  ef::log::use(nullptr); // back to a logger made from the default one
}

TEST_CASE("an_instance_stops_its_tree_before_its_services_and_a_runtime_"
          "stopped_under_a_running_tree_says_so") {
  test::temp_dir dir;
  auto cfg = test::test_settings();
  // The embedded defaults: a private cluster and an in-process broker.
  cfg.database.url.clear();
  cfg.kafka.brokers.clear();
  cfg.database.data_dir = dir.path + "/pg";
  test::seed_cluster(cfg.database.data_dir);
  cfg.database.durable = false;
  auto lines = std::make_shared<captured_lines>();
  capture_into(lines);
  caf::actor_system_config caf_cfg;
  ef::configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  auto before = running_trees();
  std::string dsn;
  {
    ef::instance eventforge{sys, cfg};
    dsn = eventforge.where().database_dsn;
    CHECK(running_trees() == before + 1);
    caf::scoped_actor self{sys};
    self
      ->request(eventforge.root(), 30s,
                create_order{"inst", {{"sku", 2, 300}}, "", "", ""})
      .receive([](const order_accepted&) {},
               [&](const caf::error& e) { FAIL(sys.render(e)); });
    REQUIRE(await_applied(cfg, eventforge.where(), 60s).applied);
  } // ~instance: drain, stop the tree, then the services
  // stop() returns once the root is off the live trees, not merely down:
  // ~runtime, right after it, must not see a tree (CI caught that race).
  CHECK(running_trees() == before);
  CHECK(lines->text().find("still run") == std::string::npos);

  // The parts in the wrong order: the services go while the tree runs.
  auto services = std::make_unique<app::runtime>(cfg);
  auto root = ef::start(sys, cfg, services->where());
  services.reset();
  CHECK(lines->text().find("while 1 EventForge tree(s) still run: stop the "
                           "tree first") != std::string::npos);
  CHECK(ef::stop(sys, root, 60s));
  CHECK(running_trees() == before);
  ef::log::use(nullptr);
}

TEST_CASE("an_instance_applies_the_log_level_before_its_services_log") {
  test::temp_dir dir;
  auto cfg = test::test_settings();
  cfg.database.url.clear(); // the private cluster logs when it starts
  cfg.kafka.brokers.clear();
  cfg.database.data_dir = dir.path + "/pg";
  test::seed_cluster(cfg.database.data_dir);
  cfg.log.level = "warn";
  auto lines = std::make_shared<captured_lines>();
  capture_into(lines); // a new logger: level info until [log] is applied
  caf::actor_system_config caf_cfg;
  ef::configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  {
    ef::instance eventforge{sys, cfg};
    CHECK_FALSE(eventforge.where().database_dsn.empty());
  }
  INFO(lines->text());
  CHECK(lines->text().find("started private PostgreSQL") == std::string::npos);
  CHECK(lines->text().find("started in-process Kafka broker") ==
        std::string::npos);
  ef::log::use(nullptr);
}

TEST_CASE("every_request_the_typed_root_accepts_is_answered_in_time_even_"
          "when_its_api_worker_crashes_after_the_commit") {
  test::database db;
  auto cfg = test::test_settings();
  cfg.chaos.points = {"api.after_commit_before_reply"};
  cfg.chaos.rate = 0.2;
  cfg.chaos.seed = 29;
  cfg.supervisor.max_restarts = 1000; // the crashes are the point here
  kafka::embedded_broker broker(1, {{cfg.kafka.topic, cfg.kafka.partitions}});
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  caf::scoped_actor self{t.system()};
  // A host written from docs/library.md: its requests carry no deadline of
  // their own; each must still be answered within the front's timeout plus
  // a margin, whatever crashed in between.
  auto bound = std::chrono::milliseconds(cfg.http.request_timeout_ms) + 5s;
  constexpr int orders = 200;
  auto command = [](int i) {
    return create_order{
      "typed", {{"sku", 1, 100 + i}}, "typed-" + std::to_string(i), "", "", 0};
  };
  auto is = [](const caf::error& e, api_errc code) {
    return e.category() == api_error_category() &&
           e.code() == static_cast<std::uint8_t>(code);
  };
  auto root = caf::actor_cast<caf::actor>(t.root());
  using handle = decltype(self->request(root, bound, command(0)));
  int accepted = 0, timed_out = 0;
  // Unknown: committed or not (the worker crashed after its transaction
  // began). Not taken: nothing was written, because the worker went before
  // it took the command out of its mailbox (CAF bounces it) or none was up
  // to take it (unavailable). Both are retried.
  std::vector<int> unknown, not_taken;
  std::vector<std::string> other;
  // Ten in flight at a time, so crashes also meet commands of one batch.
  for (int from = 0; from < orders; from += 10) {
    std::vector<handle> replies;
    for (int i = from; i < from + 10; ++i)
      replies.push_back(self->request(root, bound, command(i)));
    for (int k = 0; k < 10; ++k)
      replies[k].receive([&](const order_accepted&) { ++accepted; },
                         [&](const caf::error& e) {
                           if (e == caf::sec::request_timeout)
                             ++timed_out;
                           else if (is(e, api_errc::outcome_unknown))
                             unknown.push_back(from + k);
                           else if (e == caf::sec::request_receiver_down ||
                                    is(e, api_errc::unavailable))
                             not_taken.push_back(from + k);
                           else
                             other.push_back(t.system().render(e));
                         });
  }
  INFO("accepted " << accepted << ", unknown " << unknown.size()
                   << ", not taken " << not_taken.size() << ", timed out "
                   << timed_out << ", other "
                   << (other.empty() ? "none" : other.front()));
  CHECK(timed_out == 0);
  CHECK(other.empty());
  CHECK(accepted + unknown.size() + not_taken.size() == orders);
  CHECK_FALSE(unknown.empty()); // the crash point fired
  // Settled as docs/api-contract.md says: the same request with its key
  // again, until it is answered with the order.
  auto retry = unknown;
  retry.insert(retry.end(), not_taken.begin(), not_taken.end());
  for (auto i : retry)
    CHECK(test::wait_until([&] {
      bool settled = false;
      self->request(root, bound, command(i))
        .receive([&](const order_accepted&) { settled = true; },
                 [&](const caf::error&) {});
      return settled;
    }));
  // Each order exactly once, however many answers it took.
  CHECK(db.scalar<int>("SELECT count(*) FROM orders WHERE customer_id = "
                       "'typed'") == orders);
  CHECK(db.scalar<int>("SELECT count(*) FROM idempotency_keys WHERE key LIKE "
                       "'typed-%'") == orders);
}
