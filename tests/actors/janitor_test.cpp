// The janitor as an actor, deterministically: its retention deletions are a
// fake that records each call and answers a scripted count, and the test
// coordinator runs one message at a time on a clock that moves only when a
// timeout fires. What it pins down: one sweep of every configured table per
// round, the next round after retention.interval-ms once the backlog is
// gone and after 10 ms while a table still fills whole batches, and a drain
// answered at once after which no round sweeps again.

#include "actors/janitor.hpp"
#include "messages/tree_messages.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/caf_dsl.hpp"
#include "tests/support/round_actor.hpp"
#include <eventforge/messages/atoms.hpp>

#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <string>
#include <vector>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// Every deletion asked for ("outbox 100/10": table, age_s/limit), and how
/// many rows each table's next deletions report (0 once a script is used).
struct deletions {
  std::vector<std::string> calls;
  std::map<std::string, std::deque<long>> script;

  long take(const std::string& table, int age_s, int limit) {
    calls.push_back(table + " " + std::to_string(age_s) + "/" +
                    std::to_string(limit));
    auto& q = script[table];
    if (q.empty())
      return 0;
    auto n = q.front();
    q.pop_front();
    return n;
  }
};

struct fake_retention : persistence::retention_store {
  std::shared_ptr<deletions> d;
  explicit fake_retention(std::shared_ptr<deletions> x) : d(std::move(x)) {}
  long delete_sent_outbox(int age_s, int limit) override {
    return d->take("outbox", age_s, limit);
  }
  long delete_idempotency_keys(int age_s, int limit) override {
    return d->take("keys", age_s, limit);
  }
  long prune_resolved_dlq_entries(int age_s, int limit) override {
    return d->take("dlq", age_s, limit);
  }
  long delete_processed_marks(int age_s, int limit) override {
    return d->take("marks", age_s, limit);
  }
  long delete_journal_lines(int age_s, int limit) override {
    return d->take("journal", age_s, limit);
  }
};

struct janitor_fixture : test::actor_fixture {
  std::shared_ptr<deletions> store = std::make_shared<deletions>();
  caf::actor janitor;

  janitor_fixture() {
    config::settings cfg;
    cfg.retention.outbox_s = 100;
    cfg.api.idempotency_retention_s = 50;
    cfg.retention.dlq_resolved_s = 30;
    cfg.retention.processed_events_s = 200;
    cfg.retention.batch_size = 10;
    cfg.retention.interval_ms = 60000;
    janitor_deps deps;
    deps.store = [s = store] { return std::make_unique<fake_retention>(s); };
    janitor = sys().spawn(janitor_with, make_context(cfg), std::move(deps));
  }

  ~janitor_fixture() { caf::anon_send_exit(janitor, caf::exit_reason::kill); }

  /// The calls of one round: each table once, with its age and the batch.
  static std::vector<std::string> one_round() {
    return {"outbox 100/10", "keys 50/10", "dlq 30/10", "marks 200/10",
            "journal 200/10"};
  }
};

} // namespace

TEST_CASE("the_janitor_sweeps_every_configured_table_once_per_round_and_waits_"
          "the_interval_once_nothing_is_left") {
  janitor_fixture f;
  auto& sched = f.sched();
  sched.run(); // the first round, at start
  {
    INFO("the first round: each table once, with its retention and the batch");
    CHECK(f.store->calls == janitor_fixture::one_round());
  }
  {
    INFO("nothing filled a batch: the next round is an interval away");
    CHECK(test::next_timeout_in(sched) == 60000ms);
  }
  disallow((poll_atom), from(f.janitor).to(f.janitor));
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.janitor).to(f.janitor));
  auto twice = janitor_fixture::one_round();
  for (auto& c : janitor_fixture::one_round())
    twice.push_back(c);
  INFO("the second round, once the interval passed: each table once more");
  CHECK(f.store->calls == twice);
}

TEST_CASE("a_full_batch_brings_the_janitor_s_next_round_after_10_ms_and_the_"
          "interval_returns_once_the_backlog_is_gone") {
  janitor_fixture f;
  auto& sched = f.sched();
  f.store->script["outbox"] = {10, 4}; // a full batch, then the rest
  sched.run();
  {
    INFO("the outbox filled a whole batch: more may be waiting");
    CHECK(test::next_timeout_in(sched) == 10ms);
  }
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.janitor).to(f.janitor));
  {
    CAPTURE(f.store->calls);
    INFO("two rounds of five deletions each");
    CHECK(f.store->calls.size() == 10);
  }
  INFO("4 of 10: the backlog is gone, the next round is an interval away");
  CHECK(test::next_timeout_in(sched) == 60000ms);
}

TEST_CASE("a_drained_janitor_answers_drained_at_once_and_sweeps_no_more") {
  janitor_fixture f;
  auto& sched = f.sched();
  sched.run();
  auto answer = std::make_shared<std::optional<drain_report>>();
  auto client = f.sys().spawn(test::drain_client, answer);
  sched.run();
  inject((drain_atom), from(client).to(f.janitor).with(drain_atom::value));
  expect((drain_report), from(f.janitor).to(client).with(_));
  {
    INFO("between rounds the janitor holds nothing: drained at once");
    REQUIRE(answer->has_value());
    CHECK((*answer)->drained);
  }
  auto before = f.store->calls;
  // The round already scheduled still arrives, and does nothing.
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.janitor).to(f.janitor));
  {
    INFO("the round scheduled before the drain deletes nothing");
    CHECK(f.store->calls == before);
  }
  INFO("no further round is scheduled after a drain");
  CHECK_FALSE(test::next_timeout_in(sched).has_value());
  caf::anon_send_exit(client, caf::exit_reason::kill);
}
