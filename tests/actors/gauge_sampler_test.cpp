// The gauge sampler and the lag sampler as actors, deterministically: the
// database snapshot and the broker's lag are fakes answering a script (a
// value, or a failure), and the test coordinator runs one message at a time
// on a clock that moves only when a timeout fires. What it pins down: one
// sample per round, set on the gauges, the next round one
// metrics.sample-interval-ms later (at least 5 s for the lag); a failed
// read keeps the last values and the sampling going; a drain is answered at
// once and sampling goes on after it (on_drain::keep_rounds).

#include "actors/gauge_sampler.hpp"
#include "messages/tree_messages.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/caf_dsl.hpp"
#include "tests/support/round_actor.hpp"
#include <eventforge/messages/atoms.hpp>

#include <catch2/catch.hpp>

#include <deque>
#include <optional>
#include <stdexcept>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// What each read answers, in order: a value, or nullopt for a failure.
template <class T>
struct script {
  std::deque<std::optional<T>> answers;
  int reads = 0;

  T next() {
    ++reads;
    if (answers.empty()) // a read the test did not expect: no value
      throw std::logic_error("the test's script ran out");
    auto a = answers.front();
    answers.pop_front();
    if (!a)
      throw std::runtime_error("connection refused");
    return *a;
  }
};

persistence::ops_rows unsent(long n) {
  persistence::ops_rows rows;
  rows.outbox_unsent = n;
  return rows;
}

struct fake_ops : persistence::ops_source {
  std::shared_ptr<script<persistence::ops_rows>> s;
  explicit fake_ops(std::shared_ptr<script<persistence::ops_rows>> x)
      : s(std::move(x)) {}
  persistence::ops_rows read() override { return s->next(); }
};

lag_by_consumer lag_of_billing(long long lag) {
  return {{"billing", {{0, 100, 100 - lag, lag}}}};
}

context_ptr sampling_context() {
  config::settings cfg;
  cfg.metrics.sample_interval_ms = 1000;
  cfg.consumer.enabled = {"billing"};
  cfg.kafka.partitions = 1;
  return test::actor_fixture::make_context(cfg);
}

/// The gauge `name{labels}` as last set (0 if never set above zero).
double gauge(const context_ptr& ctx, const std::string& name,
             const telemetry::labels& l = {}) {
  auto all = ctx->metrics->positive_gauges(name);
  auto i = all.find(telemetry::key(name, l));
  return i == all.end() ? 0.0 : i->second;
}

struct gauge_fixture : test::actor_fixture {
  context_ptr ctx = sampling_context();
  std::shared_ptr<script<persistence::ops_rows>> db =
    std::make_shared<script<persistence::ops_rows>>();
  caf::actor sampler;

  void start() {
    gauge_sampler_deps deps;
    deps.db = [s = db] { return std::make_unique<fake_ops>(s); };
    sampler = sys().spawn(gauge_sampler_with, ctx, std::move(deps));
    sched().run(); // the first sample, at start
  }

  ~gauge_fixture() { caf::anon_send_exit(sampler, caf::exit_reason::kill); }
};

struct lag_fixture : test::actor_fixture {
  context_ptr ctx = sampling_context();
  std::shared_ptr<script<lag_by_consumer>> broker =
    std::make_shared<script<lag_by_consumer>>();
  caf::actor sampler;

  void start() {
    lag_sampler_deps deps;
    deps.read = [s = broker] { return s->next(); };
    sampler = sys().spawn(lag_sampler_with, ctx, std::move(deps));
    sched().run();
  }

  ~lag_fixture() { caf::anon_send_exit(sampler, caf::exit_reason::kill); }

  double billing_lag() const {
    return gauge(ctx, "consumer_lag",
                 {{"consumer", "billing"}, {"partition", "0"}});
  }
};

} // namespace

TEST_CASE(
  "the_gauge_sampler_sets_the_database_gauges_once_per_sample_interval") {
  gauge_fixture f;
  f.db->answers = {unsent(5), unsent(7)};
  f.start();
  auto& sched = f.sched();
  {
    INFO("the first sample, at start: 5 unsent rows");
    CHECK(f.db->reads == 1);
    CHECK(gauge(f.ctx, "outbox_unsent_rows") == 5);
  }
  {
    INFO("the next sample is metrics.sample-interval-ms away");
    CHECK(test::next_timeout_in(sched) == 1000ms);
  }
  disallow((poll_atom), from(f.sampler).to(f.sampler));
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.sampler).to(f.sampler));
  INFO("the second sample, an interval later: 7 unsent rows");
  CHECK(f.db->reads == 2);
  CHECK(gauge(f.ctx, "outbox_unsent_rows") == 7);
}

TEST_CASE("a_failing_database_read_keeps_the_last_gauges_and_the_gauge_sampler_"
          "goes_on_sampling") {
  gauge_fixture f;
  f.db->answers = {unsent(5), std::nullopt, unsent(9)};
  f.start();
  auto& sched = f.sched();
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.sampler).to(f.sampler));
  {
    INFO("the second read failed: the gauge keeps its last value");
    CHECK(f.db->reads == 2);
    CHECK(gauge(f.ctx, "outbox_unsent_rows") == 5);
  }
  {
    INFO("and the next sample is scheduled as usual");
    CHECK(test::next_timeout_in(sched) == 1000ms);
  }
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.sampler).to(f.sampler));
  INFO("the third read succeeds: the gauge moves again");
  CHECK(gauge(f.ctx, "outbox_unsent_rows") == 9);
}

TEST_CASE(
  "the_gauge_sampler_answers_a_drain_at_once_and_keeps_sampling_after_it") {
  gauge_fixture f;
  f.db->answers = {unsent(5), unsent(6)};
  f.start();
  auto& sched = f.sched();
  auto answer = std::make_shared<std::optional<drain_report>>();
  auto client = f.sys().spawn(test::drain_client, answer);
  sched.run();
  inject((drain_atom), from(client).to(f.sampler).with(drain_atom::value));
  expect((drain_report), from(f.sampler).to(client).with(_));
  {
    INFO("the sampler holds nothing between rounds: drained at once");
    REQUIRE(answer->has_value());
    CHECK((*answer)->drained);
  }
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.sampler).to(f.sampler));
  INFO("a drained tree that keeps running still shows the outbox: sampled "
       "after the drain, and the next sample scheduled");
  CHECK(f.db->reads == 2);
  CHECK(gauge(f.ctx, "outbox_unsent_rows") == 6);
  CHECK(test::next_timeout_in(sched) == 1000ms);
  caf::anon_send_exit(client, caf::exit_reason::kill);
}

TEST_CASE("the_lag_sampler_samples_at_most_every_5_s_and_a_broker_that_cannot_"
          "answer_does_not_stop_it") {
  lag_fixture f;
  f.broker->answers = {std::nullopt, lag_of_billing(40), lag_of_billing(10)};
  f.start();
  auto& sched = f.sched();
  {
    INFO("the first read failed: no lag is shown");
    CHECK(f.broker->reads == 1);
    CHECK(f.billing_lag() == 0);
  }
  {
    INFO("a broker client per sample: at least 5 s apart, not 1 s");
    CHECK(test::next_timeout_in(sched) == 5000ms);
  }
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.sampler).to(f.sampler));
  {
    INFO("the sample after the failure: billing lags 40 on partition 0");
    CHECK(f.billing_lag() == 40);
  }
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.sampler).to(f.sampler));
  INFO("the next sample: billing lags 10");
  CHECK(f.billing_lag() == 10);
}

TEST_CASE(
  "the_lag_sampler_answers_a_drain_at_once_and_keeps_sampling_after_it") {
  lag_fixture f;
  f.broker->answers = {lag_of_billing(40), lag_of_billing(3)};
  f.start();
  auto& sched = f.sched();
  auto answer = std::make_shared<std::optional<drain_report>>();
  auto client = f.sys().spawn(test::drain_client, answer);
  sched.run();
  inject((drain_atom), from(client).to(f.sampler).with(drain_atom::value));
  expect((drain_report), from(f.sampler).to(client).with(_));
  {
    INFO("the sampler holds nothing between rounds: drained at once");
    REQUIRE(answer->has_value());
    CHECK((*answer)->drained);
  }
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.sampler).to(f.sampler));
  INFO("sampled after the drain: the lag moved from 40 to 3");
  CHECK(f.broker->reads == 2);
  CHECK(f.billing_lag() == 3);
  caf::anon_send_exit(client, caf::exit_reason::kill);
}

TEST_CASE("a_lag_read_that_fails_removes_the_lag_series_and_its_age_grows_"
          "instead_of_a_frozen_value") {
  lag_fixture f;
  f.broker->answers = {lag_of_billing(40), std::nullopt, lag_of_billing(10)};
  f.start();
  auto& sched = f.sched();
  auto shown = [&] {
    return f.ctx->metrics->render_prometheus().find(
             "\nconsumer_lag{consumer=\"billing\",partition=\"0\"} ") !=
           std::string::npos;
  };
  auto age = [&] {
    return gauge(f.ctx, "consumer_lag_sample_age_seconds",
                 {{"consumer", "billing"}});
  };
  CHECK(f.billing_lag() == 40);
  CHECK(shown());
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.sampler).to(f.sampler));
  {
    INFO("the read failed: the lag is absent, never the old 40, and its age "
         "says since when it was not read");
    CHECK_FALSE(shown());
    CHECK(age() >= 5.0);
  }
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.sampler).to(f.sampler));
  INFO("read again: shown, and fresh");
  CHECK(f.billing_lag() == 10);
  CHECK(age() == 0);
}
