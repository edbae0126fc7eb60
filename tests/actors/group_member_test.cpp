// The group member as an actor, deterministically: its Kafka client, its
// partition actors, its gap ledger and its LISTEN session are fakes, and the
// test coordinator runs one message at a time; the member reads the actor
// clock, which moves only when a test moves it. What it pins down: pause at
// consumer.max-in-flight, resume at half, offsets committed only after the
// partition actor reported them done, a crashed partition actor restarted
// after its backoff and its partition rewound to the committed offset, a
// drain answered once nothing is in flight, parking (an idle partition at
// its end pauses after kafka.park-idle-ms, an announcement resumes it, a
// broken listener unparks all), the fetch watchdog (a partition fed nothing
// for 10 s with records on the broker is restarted where its applied
// records end; an idle one is not), a revoke (the partition's actor is
// stopped, what it applied is committed and nothing past it), and an
// operator's pause (obeyed once what is in flight is applied and committed;
// a paused member joins no group and makes way once resumed).

#include "actors/group_member.hpp"
#include "messages/tree_messages.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/caf_dsl.hpp"
#include <eventforge/messages/atoms.hpp>

#include <catch2/catch.hpp>

#include <deque>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// A Kafka client that serves queued records and records every call.
struct fake_client : kafka::group_client {
  struct shared {
    callbacks cbs;
    std::vector<std::int32_t> assign_next_poll;
    std::deque<partition_record> records;
    std::set<std::int32_t> paused;
    std::vector<std::string> calls; ///< "pause 0", "resume 0", "commit 0@3"
    std::map<std::int32_t, std::int64_t> committed_offsets;
    std::vector<int> poll_timeouts; ///< of every poll, in order
    /// The next poll reports these partitions' positions lost (a new
    /// group's first record: no committed offset).
    std::vector<std::int32_t> lose_next_poll;
    /// How many polls came before the last restart_at.
    std::size_t restarted_after_polls = 0;
    /// The next poll reports these partitions revoked.
    std::vector<std::int32_t> revoke_next_poll;
    /// The next poll reports these partitions read to their end (partition,
    /// next offset).
    std::vector<std::pair<std::int32_t, std::int64_t>> at_end_next_poll;
    /// The broker's log start and end per partition ({0, 0} if not set).
    std::map<std::int32_t, watermarks> marks;
  };
  std::shared_ptr<shared> s;

  explicit fake_client(std::shared_ptr<shared> state) : s(std::move(state)) {}

  std::optional<partition_record> poll(int timeout_ms) override {
    s->poll_timeouts.push_back(timeout_ms);
    for (auto p : std::exchange(s->lose_next_poll, {}))
      s->cbs.position_lost(p, -1);
    if (auto parts = std::exchange(s->revoke_next_poll, {}); !parts.empty())
      s->cbs.revoked(parts);
    for (auto [p, next] : std::exchange(s->at_end_next_poll, {}))
      s->cbs.at_end(p, next);
    if (!s->assign_next_poll.empty()) {
      auto parts = std::exchange(s->assign_next_poll, {});
      s->cbs.assigned(parts);
      return std::nullopt;
    }
    for (auto i = s->records.begin(); i != s->records.end(); ++i)
      if (s->paused.count(i->partition) == 0) {
        auto r = *i;
        s->records.erase(i);
        return r;
      }
    return std::nullopt;
  }
  caf::error commit(
    const std::vector<std::pair<std::int32_t, std::int64_t>>& next) override {
    for (auto& [p, o] : next) {
      s->calls.push_back("commit " + std::to_string(p) + "@" +
                         std::to_string(o));
      s->committed_offsets[p] = o;
    }
    return {};
  }
  std::int64_t committed(std::int32_t p) override {
    auto i = s->committed_offsets.find(p);
    return i == s->committed_offsets.end() ? -1 : i->second;
  }
  void seek(std::int32_t p, std::int64_t offset) override {
    s->calls.push_back("seek " + std::to_string(p) + "@" +
                       std::to_string(offset));
  }
  void restart_at(const std::map<std::int32_t, std::int64_t>& at,
                  const std::set<std::int32_t>&) override {
    s->calls.push_back("restart_at");
    for (auto& [p, o] : at)
      s->calls.push_back("restart_at " + std::to_string(p) + "@" +
                         std::to_string(o));
    s->restarted_after_polls = s->poll_timeouts.size();
  }
  watermarks query_watermarks(std::int32_t p) override { return s->marks[p]; }
  void pause(std::int32_t p) override {
    s->paused.insert(p);
    s->calls.push_back("pause " + std::to_string(p));
  }
  void resume(std::int32_t p) override {
    s->paused.erase(p);
    s->calls.push_back("resume " + std::to_string(p));
  }
  void resume_at_once(std::int32_t p, std::int64_t offset) override {
    s->paused.erase(p);
    s->calls.push_back("resume_at_once " + std::to_string(p) + "@" +
                       std::to_string(offset));
  }
  void close() override {}
};

/// The process's LISTEN session: healthy until a test breaks it; the sink
/// the member subscribed is where a test announces a relay's publish.
struct fake_listener : persistence::announcement_source {
  bool ok = true;
  std::weak_ptr<persistence::published_sink> sink;
  bool healthy() const override { return ok; }
  void subscribe(std::weak_ptr<persistence::published_sink> s) override {
    sink = std::move(s);
  }
};

struct fake_ledger : gap_ledger {
  int current_epoch() override { return 1; }
  persistence::gap_record record_gap(const std::string&, std::int32_t,
                                     std::int64_t, std::int64_t,
                                     std::int64_t) override {
    return {};
  }
};

/// What the fake partition actors hold: records handed to them, per
/// partition, in order.
struct held_records {
  std::map<std::int32_t, std::deque<partition_record>> held;
  std::map<std::int32_t, caf::actor> actors;
  int spawned = 0;
};

/// A partition actor that keeps what it is handed and reports the oldest
/// record done when told to (flush_atom), or fails (an exit with an error)
/// when told to (retry_atom).
caf::behavior fake_worker(caf::event_based_actor* self,
                          std::shared_ptr<held_records> h, std::int32_t p,
                          caf::actor member) {
  return {
    [=](partition_record& r) { h->held[p].push_back(std::move(r)); },
    [=](flush_atom) {
      auto& q = h->held[p];
      if (q.empty())
        return;
      auto r = q.front();
      q.pop_front();
      self->send(member, record_done{r.partition, r.offset, r.key, "", ""});
    },
    [=](retry_atom) { self->quit(caf::make_error(caf::sec::runtime_error)); },
  };
}

partition_record record(std::int32_t p, std::int64_t offset) {
  partition_record r;
  r.partition = p;
  r.offset = offset;
  r.key = "k";
  return r;
}

/// The operator's control as a member sees it: whether its consumer is
/// paused, and what the member reported (its state and partitions).
struct fake_control {
  bool paused = false;
  std::vector<persistence::member_report> reports;
  std::vector<std::string> left;

  member_control make(const std::shared_ptr<fake_control>& self) const {
    member_control c;
    c.heartbeat = [self](const persistence::member_report& me) {
      self->reports.push_back(me);
      return self->paused;
    };
    c.leave = [self](const std::string&, const std::string& member) {
      self->left.push_back(member);
    };
    return c;
  }
};

struct member_fixture : test::actor_fixture {
  std::shared_ptr<fake_client::shared> client =
    std::make_shared<fake_client::shared>();
  std::shared_ptr<held_records> workers = std::make_shared<held_records>();
  caf::actor member;

  context_ptr ctx;
  /// Every listener the member asked for (parking), the newest last.
  std::shared_ptr<std::vector<std::shared_ptr<fake_listener>>> listeners =
    std::make_shared<std::vector<std::shared_ptr<fake_listener>>>();

  std::shared_ptr<fake_control> control = std::make_shared<fake_control>();
  /// Why the member exited (none while it runs), told in its own cleanup.
  std::shared_ptr<std::optional<caf::error>> exit =
    std::make_shared<std::optional<caf::error>>();

  /// `with_listener`: the member parks idle partitions (kafka.park-idle-ms
  /// 500, recheck after a minute) on announcements from a fake listener.
  explicit member_fixture(int max_in_flight, bool with_listener = false) {
    auto cfg = config::settings{};
    cfg.consumer.max_in_flight = max_in_flight;
    cfg.supervisor.restart_backoff_ms = 10;
    cfg.kafka.park_idle_ms = 500;
    cfg.kafka.park_recheck_ms = 60000;
    ctx = make_context(cfg);
    group_member_deps deps;
    auto c = client;
    deps.client = [c](kafka::group_client::callbacks cbs) {
      c->cbs = std::move(cbs);
      return std::make_unique<fake_client>(c);
    };
    auto w = workers;
    deps.worker = [w](caf::event_based_actor* m, std::int32_t p) {
      ++w->spawned;
      auto a = m->spawn<caf::linked>(fake_worker, w, p, caf::actor{m});
      w->actors[p] = a;
      return a;
    };
    deps.ledger = [] { return std::make_unique<fake_ledger>(); };
    if (with_listener)
      deps.listener = [ls = listeners] {
        ls->push_back(std::make_shared<fake_listener>());
        return ls->back();
      };
    deps.control = control->make(control);
    member =
      sys().spawn(group_member_with, ctx, std::string("test"), std::move(deps));
    member->attach_functor(
      [out = exit](const caf::error& reason) { *out = reason; });
    client->assign_next_poll = {0};
    REQUIRE(run_until([&] { return workers->actors.count(0) != 0; }));
  }

  ~member_fixture() { caf::anon_send_exit(member, caf::exit_reason::kill); }

  /// Moves the actor clock on by `d` and lets the member poll a while.
  void later(caf::timespan d) {
    sched().clock().current_time += d;
    run(20);
  }

  bool called(const std::string& call) const {
    return std::find(client->calls.begin(), client->calls.end(), call) !=
           client->calls.end();
  }

  /// Tells partition 0's actor to report its oldest record done and runs
  /// until the member has handled it.
  void one_done() {
    auto before = workers->held[0].size();
    caf::anon_send(workers->actors[0], flush_atom::value);
    REQUIRE(run_until([&] { return workers->held[0].size() < before; }));
    run(20); // the member's record_done and a poll or two
  }
};

} // namespace

TEST_CASE("the_member_pauses_a_partition_at_max_in_flight_and_resumes_it_at_"
          "exactly_half") {
  member_fixture f(4);
  for (int i = 0; i < 6; ++i)
    f.client->records.push_back(record(0, i));
  // Four records reach the partition actor; then the fetch is paused and
  // the other two stay with the client.
  REQUIRE(f.run_until([&] { return f.called("pause 0"); }));
  f.run(50);
  CHECK(f.workers->held[0].size() == 4);
  CHECK(f.client->records.size() == 2);
  // 4 -> 3: still above half; no resume yet.
  f.one_done();
  CHECK_FALSE(f.called("resume 0"));
  // 3 -> 2 = half: resumed now, not one record later.
  f.one_done();
  CHECK(f.called("resume 0"));
  // Only what was reported done is committed: offsets 0 and 1.
  REQUIRE(f.run_until([&] { return f.called("commit 0@2"); }));
  CHECK_FALSE(f.called("commit 0@3"));
  // The rest flows again.
  REQUIRE(f.run_until([&] { return f.client->records.empty(); }));
}

TEST_CASE("a_crashed_partition_actor_is_restarted_after_its_backoff_and_its_"
          "partition_rewound_to_the_committed_offset") {
  member_fixture f(100);
  for (int i = 0; i < 3; ++i)
    f.client->records.push_back(record(0, i));
  REQUIRE(f.run_until([&] { return f.workers->held[0].size() == 3; }));
  f.one_done();
  REQUIRE(f.run_until([&] { return f.called("commit 0@1"); }));
  // The actor fails with two records in hand: the partition pauses and
  // waits for the restart, which comes only when its backoff has passed.
  auto old = f.workers->actors[0];
  caf::anon_send(old, retry_atom::value);
  REQUIRE(f.run_until([&] { return f.called("pause 0"); }));
  f.run(100);
  CHECK(f.workers->spawned == 1); // not before its backoff has passed
  CHECK(f.sched().trigger_timeouts() > 0);
  REQUIRE(f.run_until([&] { return f.workers->spawned == 2; }));
  // Rewound to what was committed: the two unfinished records come again.
  CHECK(f.called("seek 0@1"));
  CHECK(f.called("resume 0"));
}

TEST_CASE("a_drain_is_answered_once_the_partition_actors_hold_nothing_and_"
          "the_offsets_are_committed") {
  member_fixture f(100);
  for (int i = 0; i < 2; ++i)
    f.client->records.push_back(record(0, i));
  REQUIRE(f.run_until([&] { return f.workers->held[0].size() == 2; }));
  auto answer = std::make_shared<std::optional<drain_report>>();
  f.sys().spawn(
    [answer](caf::event_based_actor* self, caf::actor member) {
      self->request(member, caf::infinite, drain_atom::value)
        .then([=](drain_report& r) { *answer = r; });
    },
    f.member);
  REQUIRE(f.run_until([&] { return f.called("pause 0"); }));
  f.run(20);
  CHECK_FALSE(answer->has_value()); // two records still in flight
  f.one_done();
  CHECK_FALSE(answer->has_value());
  f.one_done();
  REQUIRE(f.run_until([&] { return answer->has_value(); }));
  CHECK((*answer)->drained);
  CHECK(f.called("commit 0@2"));
  // Drained: it stays paused.
  CHECK_FALSE(f.called("resume 0"));
}

TEST_CASE("the_member_reads_the_broker_epoch_on_news_of_a_new_one_and_"
          "otherwise_every_30_s") {
  // An idle member used to read broker_epochs every second; a new epoch is
  // now announced on the listener's session (migration 11's NOTIFY), and
  // the read without news is the safety net.
  struct counting_ledger : gap_ledger {
    std::shared_ptr<int> reads;
    int current_epoch() override {
      ++*reads;
      return 1;
    }
    persistence::gap_record record_gap(const std::string&, std::int32_t,
                                       std::int64_t, std::int64_t,
                                       std::int64_t) override {
      return {};
    }
  };
  auto reads = std::make_shared<int>(0);
  auto ledger = std::make_unique<counting_ledger>();
  ledger->reads = reads;
  partition_repairs repairs("billing", std::move(ledger), 10s);
  partition_flow flow(16);
  fake_client client(std::make_shared<fake_client::shared>());
  telemetry metrics;
  auto t0 = partition_flow::clock::now();
  auto run = [&](std::chrono::seconds at) {
    repairs.run(flow, client, metrics, t0 + at, [](std::int32_t) {});
  };
  run(0s); // the first run reads it
  CHECK(*reads == 1);
  run(1s);
  run(2s);
  CHECK(*reads == 1); // no news: not read again
  repairs.epoch_news();
  run(3s);
  CHECK(*reads == 2);
  run(32s);
  CHECK(*reads == 2);
  run(33s); // 30 s after the last read
  CHECK(*reads == 3);
}

TEST_CASE("a_lost_position_shortens_the_member_s_polls_until_it_is_settled") {
  // A new group's first record finds no committed offset: the position is
  // lost and settled at a housekeeping pulled 100 ms forward. An idle
  // member's poll blocks 250 ms; the polls after the loss must end by the
  // settle, or the record waits one idle poll more (up to 350 ms measured
  // for the first order after ready).
  member_fixture f(4);
  f.run(5);
  REQUIRE_FALSE(f.client->poll_timeouts.empty());
  CHECK(f.client->poll_timeouts.back() == 250); // idle
  f.client->lose_next_poll = {0};
  auto before = f.client->poll_timeouts.size();
  REQUIRE(
    f.run_until([&] { return f.client->poll_timeouts.size() > before + 1; }));
  // The poll that reported the loss was idle; the next ends by the settle
  // (unless, on a very slow machine, the settle came before it).
  CHECK(f.client->poll_timeouts[before] == 250);
  bool settled_first =
    f.called("restart_at") && f.client->restarted_after_polls <= before + 1;
  CHECK((f.client->poll_timeouts[before + 1] <= 100 || settled_first));
  // Once settled, idle polls are idle again. The member reads the actor
  // clock: the settle comes once the test clock passed the 100 ms.
  f.sched().clock().current_time += 100ms;
  REQUIRE(f.run_until([&] { return f.called("restart_at"); }, 100));
  f.run(5);
  CHECK(f.client->poll_timeouts.back() == 250);
}

namespace {

double parked_gauge(const member_fixture& f) {
  auto all = f.ctx->metrics->positive_gauges("consumer_partitions_parked");
  auto i = all.find(
    telemetry::key("consumer_partitions_parked", {{"consumer", "test"}}));
  return i == all.end() ? 0.0 : i->second;
}

/// Partition 0 read to its end (next offset 3) at the current time.
void read_to_the_end(member_fixture& f) {
  REQUIRE(f.listeners->size() == 1); // subscribed at the first housekeeping
  f.client->at_end_next_poll = {{0, 3}};
  REQUIRE(f.run_until([&] { return f.client->at_end_next_poll.empty(); }));
  f.run(20);
}

} // namespace

TEST_CASE("an_idle_partition_at_its_end_parks_after_kafka_park_idle_ms_and_a_"
          "relay_s_announcement_resumes_it_at_once") {
  member_fixture f(100, true);
  f.run(20);
  read_to_the_end(f);
  f.later(499ms);
  {
    INFO("at its end for 499 ms: still fetching");
    CAPTURE(f.client->calls);
    CHECK_FALSE(f.called("pause 0"));
  }
  f.later(1ms);
  {
    INFO("at its end for 500 ms, nothing announced past it: parked");
    CAPTURE(f.client->calls);
    CHECK(f.called("pause 0"));
    CHECK(parked_gauge(f) == 1);
  }
  auto sink = f.listeners->back()->sink.lock();
  REQUIRE(sink != nullptr);
  sink->published(0, 3); // on the listener's thread in production
  f.run(20);
  INFO("a record at offset 3 was announced: resumed at its end at once");
  CAPTURE(f.client->calls);
  CHECK(f.called("resume_at_once 0@3"));
  CHECK(parked_gauge(f) == 0);
}

TEST_CASE("a_listener_that_broke_unparks_every_parked_partition_and_the_member_"
          "listens_on_a_new_one") {
  member_fixture f(100, true);
  f.run(20);
  read_to_the_end(f);
  f.later(500ms);
  REQUIRE(f.called("pause 0"));
  f.listeners->back()->ok = false;
  f.later(1s); // the next housekeeping, a second after the first
  INFO("the listener broke while partition 0 was parked: announcements may "
       "have been missed, so it is fetched again and a new listener taken");
  CAPTURE(f.client->calls);
  CHECK(f.called("resume_at_once 0@3"));
  CHECK(f.listeners->size() == 2);
  CHECK(parked_gauge(f) == 0);
}

TEST_CASE("a_partition_fed_nothing_for_10_s_while_the_broker_holds_records_"
          "past_it_has_its_fetch_restarted_at_its_committed_offset") {
  member_fixture f(100);
  f.client->committed_offsets[0] = 2;
  f.client->marks[0] = {0, 5};
  f.run(20);
  f.later(9s);
  {
    INFO("fed nothing for 9 s: not yet a stall");
    CAPTURE(f.client->calls);
    CHECK_FALSE(f.called("restart_at"));
  }
  f.later(1s);
  INFO("fed nothing for 10 s, offsets 2..5 on the broker, nothing in flight: "
       "stalled, and restarted at the committed offset 2");
  CAPTURE(f.client->calls);
  CHECK(f.called("restart_at 0@2"));
  CHECK(f.ctx->metrics->sum("consumer_fetch_stalls_total") == 1);
}

TEST_CASE("a_partition_fed_nothing_whose_log_ends_where_it_stands_is_idle_not_"
          "stalled") {
  member_fixture f(100);
  f.client->committed_offsets[0] = 2;
  f.client->marks[0] = {0, 2};
  f.run(20);
  f.later(10s);
  f.later(10s);
  INFO("20 s unfed, but the log ends at 2 where it stands: nothing to read");
  CAPTURE(f.client->calls);
  CHECK_FALSE(f.called("restart_at"));
  CHECK(f.ctx->metrics->sum("consumer_fetch_stalls_total") == 0);
}

TEST_CASE("a_revoked_partition_s_actor_is_stopped_and_what_it_applied_is_"
          "committed_and_nothing_past_it") {
  member_fixture f(100);
  for (int i = 0; i < 4; ++i)
    f.client->records.push_back(record(0, i));
  REQUIRE(f.run_until([&] { return f.workers->held[0].size() == 4; }));
  f.one_done();
  f.one_done(); // offsets 0 and 1 applied; 2 and 3 still in the actor
  auto worker = f.workers->actors[0];
  f.client->revoke_next_poll = {0};
  REQUIRE(f.run_until([&] { return f.client->revoke_next_poll.empty(); }));
  auto& sched = f.sched();
  // The old actor finishes offset 2 after the revoke: its report is not
  // the member's any more, and the new owner reads offset 2 again.
  caf::send_as(worker, f.member, record_done{0, 2, "k", "", ""});
  expect((poll_atom), from(f.member).to(f.member)); // queued before it
  expect((record_done), from(worker).to(f.member).with(_));
  // The revoke stopped the partition's actor.
  expect((caf::exit_msg), from(f.member).to(worker).with(_));
  f.run(50);
  {
    INFO("offsets 0 and 1 were applied: committed up to 2, never past it");
    CAPTURE(f.client->calls);
    CHECK(f.called("commit 0@2"));
    CHECK_FALSE(f.called("commit 0@3"));
    CHECK_FALSE(f.called("commit 0@4"));
  }
  INFO("no new actor for a partition the member no longer owns");
  CHECK(f.workers->spawned == 1);
}

TEST_CASE("an_operators_pause_is_obeyed_once_what_is_in_flight_is_applied_and_"
          "committed_and_the_member_leaves_as_paused") {
  member_fixture f(100);
  for (int i = 0; i < 2; ++i)
    f.client->records.push_back(record(0, i));
  REQUIRE(f.run_until([&] { return f.workers->held[0].size() == 2; }));
  f.later(std::chrono::seconds(1)); // a heartbeat: consuming partition 0
  REQUIRE(!f.control->reports.empty());
  CHECK_FALSE(f.control->reports.back().paused);
  CHECK(f.control->reports.back().partitions == std::vector<std::int32_t>{0});
  f.control->paused = true;
  f.later(std::chrono::seconds(1)); // the next heartbeat reads the pause
  CHECK(f.called("pause 0"));
  CHECK_FALSE(f.exit->has_value()); // two records still in flight
  f.one_done();
  CHECK_FALSE(f.exit->has_value());
  f.one_done();
  REQUIRE(f.run_until([&] { return f.exit->has_value(); }));
  CHECK(f.called("commit 0@2")); // applied and committed before it left
  CHECK(**f.exit == caf::make_error(control_errc::paused));
  CHECK(is_control_exit(**f.exit));
  CHECK(f.control->left.size() == 1);
}

TEST_CASE("a_member_of_a_paused_consumer_joins_no_group_reports_itself_paused_"
          "and_makes_way_once_resumed") {
  test::actor_fixture f;
  auto ctx = test::actor_fixture::make_context(config::settings{});
  auto control = std::make_shared<fake_control>();
  control->paused = true;
  auto clients = std::make_shared<int>(0);
  group_member_deps deps;
  deps.client = [clients](kafka::group_client::callbacks) {
    ++*clients;
    return std::unique_ptr<kafka::group_client>{};
  };
  deps.control = control->make(control);
  auto member =
    f.sys().spawn(group_member_with, ctx, std::string("test"), std::move(deps));
  auto exit = std::make_shared<std::optional<caf::error>>();
  member->attach_functor([exit](const caf::error& r) { *exit = r; });
  REQUIRE(f.run_until([&] { return control->reports.size() >= 2; }));
  CHECK(control->reports.back().paused);
  CHECK(*clients == 0); // never in the group
  CHECK_FALSE(exit->has_value());
  control->paused = false;
  REQUIRE(f.run_until([&] { return exit->has_value(); }));
  CHECK(**exit == caf::make_error(control_errc::resumed));
  CHECK(control->left.size() == 1);
}
