// The supervisor as an actor, deterministically, with children that crash
// or hang on command: restarts after the backoff, escalation past the
// intensity (but never for a database outage), and a drain report that
// names the child that did not answer.

#include "actors/crash_log.hpp"
#include "actors/supervisor.hpp"
#include "messages/tree_messages.hpp"
#include "tests/support/actor_fixture.hpp"
#include <eventforge/messages/atoms.hpp>

#include <catch2/catch.hpp>

using namespace ef;

namespace {

/// How a fake child answers: crash on retry_atom (with `why`), and answer
/// a drain, or not.
struct child_script {
  caf::error why = caf::make_error(caf::sec::runtime_error);
  bool answers_drain = true;
  int started = 0;
};

caf::behavior fake_child(caf::event_based_actor* self,
                         std::shared_ptr<child_script> script) {
  ++script->started;
  return {
    [=](retry_atom) { self->quit(script->why); },
    [=](drain_atom) -> caf::result<drain_report> {
      if (script->answers_drain)
        return drain_report{true, {}};
      return self->make_response_promise<drain_report>(); // never answered
    },
  };
}

struct supervisor_fixture : test::actor_fixture {
  std::map<std::string, std::shared_ptr<child_script>> scripts;
  caf::actor sup;
  caf::actor watcher;
  std::shared_ptr<std::optional<caf::error>> ended =
    std::make_shared<std::optional<caf::error>>();

  supervisor_fixture(int max_restarts, std::vector<std::string> names) {
    config::settings cfg;
    cfg.supervisor.max_restarts = max_restarts;
    cfg.supervisor.restart_backoff_ms = 10;
    cfg.shutdown.drain_timeout_ms = 1000;
    std::vector<child_spec> specs;
    for (auto& n : names) {
      auto s = std::make_shared<child_script>();
      scripts[n] = s;
      specs.push_back({"test", n,
                       [s](caf::local_actor* parent) {
                         return parent->spawn<caf::linked>(fake_child, s);
                       },
                       ""});
    }
    sup = caf::actor_cast<caf::actor>(
      sys().spawn(supervisor, std::string("sup"), specs, make_context(cfg)));
    // Watches the supervisor end (escalation) and keeps its reason.
    auto e = ended;
    watcher = sys().spawn(
      [e](caf::event_based_actor* self, caf::actor s) {
        self->monitor(s);
        self->set_down_handler([=](caf::down_msg& dm) { *e = dm.reason; });
        return caf::behavior{[](int) {}};
      },
      sup);
    run(100);
  }

  ~supervisor_fixture() {
    caf::anon_send_exit(sup, caf::exit_reason::kill);
    caf::anon_send_exit(watcher, caf::exit_reason::kill);
  }

  caf::actor child(const std::string& name) {
    std::map<std::string, caf::actor> live;
    sys().spawn(
      [&live](caf::event_based_actor* self, caf::actor s) {
        self->request(s, caf::infinite, children_atom::value)
          .then([&](std::map<std::string, caf::actor>& m) { live = m; });
      },
      sup);
    run(100);
    return live.count(name) ? live[name] : caf::actor{};
  }

  void crash(const std::string& name) {
    caf::anon_send(child(name), retry_atom::value);
    run(100);
  }
};

} // namespace

TEST_CASE("a_crashed_child_is_started_again_only_after_its_backoff") {
  supervisor_fixture f(10, {"a", "b"});
  CHECK(f.scripts["a"]->started == 1);
  f.crash("a");
  CHECK(f.scripts["a"]->started == 1); // waiting for its backoff
  CHECK_FALSE(f.child("a"));
  CHECK(f.child("b")); // one_for_one: the sibling is untouched
  CHECK(f.sched().trigger_timeouts() > 0);
  f.run(100);
  CHECK(f.scripts["a"]->started == 2);
  CHECK(f.child("a"));
  CHECK_FALSE(f.ended->has_value());
}

TEST_CASE("crashes_past_the_restart_intensity_escalate_but_a_database_"
          "outage_never_does") {
  SECTION("exceptions") {
    supervisor_fixture f(2, {"a"});
    for (int i = 0; i < 2; ++i) {
      f.crash("a");
      f.sched().trigger_timeouts();
      f.run(100);
    }
    CHECK_FALSE(f.ended->has_value());
    f.crash("a"); // the third within the window: the supervisor fails
    REQUIRE(f.ended->has_value());
    CHECK(**f.ended == caf::sec::runtime_error);
  }
  SECTION("database outages") {
    supervisor_fixture f(2, {"a"});
    f.scripts["a"]->why = caf::make_error(persistence::db_errc::unavailable);
    for (int i = 0; i < 10; ++i) {
      f.crash("a");
      f.sched().trigger_timeouts();
      f.run(100);
    }
    CHECK_FALSE(f.ended->has_value());
    CHECK(f.scripts["a"]->started == 11);
  }
}

TEST_CASE("a_drain_report_names_the_child_that_did_not_answer_in_time") {
  supervisor_fixture f(10, {"quick", "stuck"});
  f.scripts["stuck"]->answers_drain = false;
  auto report = std::make_shared<std::optional<drain_report>>();
  f.sys().spawn(
    [report](caf::event_based_actor* self, caf::actor s) {
      self->request(s, caf::infinite, drain_atom::value)
        .then([=](drain_report& r) { *report = r; });
    },
    f.sup);
  f.run(100);
  CHECK_FALSE(report->has_value()); // "stuck" has not answered
  f.sched().trigger_timeouts();     // shutdown.drain-timeout-ms passed
  f.run(100);
  REQUIRE(report->has_value());
  CHECK_FALSE((*report)->drained);
  CHECK((*report)->not_drained ==
        std::vector<std::string>{"stuck: no answer within 1000 ms"});
}
