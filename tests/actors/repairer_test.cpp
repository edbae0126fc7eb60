// The repairer as an actor, deterministically: its repair store is a fake
// outbox (rows with the epoch they were published in and the consumers that
// applied them) and its broker probe a fake log, and the test coordinator
// runs one message at a time on a clock that moves only when a timeout
// fires. What it pins down: a broker that no longer holds the witness
// begins one new epoch, and exactly the rows some enabled consumer lacks
// are queued again; a broker that still holds it begins nothing and queues
// nothing, round after round; a repairer without the lease checks nothing.

#include "actors/repairer.hpp"
#include "messages/tree_messages.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/caf_dsl.hpp"
#include "tests/support/round_actor.hpp"
#include <eventforge/messages/atoms.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// The outbox and the broker log the fakes share.
struct world {
  struct row {
    std::int64_t seq;
    int epoch;
    std::set<std::string> applied_by;
    bool swept = false;
  };
  bool lease = true;
  int epoch = 1;
  std::vector<row> rows;
  /// The outbox's newest position per partition, under the current epoch.
  std::map<std::int32_t, persistence::broker_witness> newest;
  std::vector<std::string> epochs_begun; ///< their reasons
  std::vector<std::int64_t> queued;      ///< seqs queued again, in order
  int store_reads = 0;                   ///< witness and position reads
  /// The broker: per partition, its low and high watermarks and the event
  /// id at each offset it holds.
  std::map<std::int32_t, kafka::log_probe::watermarks> marks;
  std::map<std::int32_t, std::map<std::int64_t, std::string>> log;
  int probe_calls = 0;
};

struct fake_epochs : persistence::broker_epochs {
  std::shared_ptr<world> w;
  explicit fake_epochs(std::shared_ptr<world> x) : w(std::move(x)) {}
  int current_epoch() override { return w->epoch; }
  bool hold_repairer_lease() override { return w->lease; }
  long resweep_recent_gaps(int) override { return 0; }
  std::optional<persistence::broker_witness>
  witness_of(std::int32_t p) override {
    return newest_position(p);
  }
  std::optional<persistence::broker_witness>
  newest_position(std::int32_t p) override {
    ++w->store_reads;
    auto i = w->newest.find(p);
    if (i == w->newest.end() || i->second.epoch != w->epoch)
      return std::nullopt;
    return i->second;
  }
  void save_witness(const persistence::broker_witness&) override {}
  int begin_epoch(const std::string& reason) override {
    w->epochs_begun.push_back(reason);
    return ++w->epoch;
  }
  long sweep_old_epochs(const std::vector<std::string>& consumers,
                        int) override {
    long n = 0;
    for (auto& r : w->rows) {
      if (r.epoch >= w->epoch || r.swept)
        continue;
      r.swept = true;
      for (auto& c : consumers)
        if (r.applied_by.count(c) == 0) {
          w->queued.push_back(r.seq);
          ++n;
          break;
        }
    }
    return n;
  }
};

struct fake_log : kafka::log_probe {
  std::shared_ptr<world> w;
  explicit fake_log(std::shared_ptr<world> x) : w(std::move(x)) {}
  watermarks query_watermarks(std::int32_t p, int) override {
    ++w->probe_calls;
    return w->marks[p];
  }
  std::optional<std::string> event_id_at(std::int32_t p, std::int64_t offset,
                                         int) override {
    ++w->probe_calls;
    auto& l = w->log[p];
    auto i = l.find(offset);
    return i == l.end() ? std::nullopt : std::optional<std::string>(i->second);
  }
};

struct repairer_fixture : test::actor_fixture {
  std::shared_ptr<world> w = std::make_shared<world>();
  context_ptr ctx;
  caf::actor repairer;

  repairer_fixture() {
    config::settings cfg;
    cfg.kafka.partitions = 1;
    cfg.consumer.enabled = {"billing", "fulfillment"};
    cfg.repair.interval_ms = 1000;
    ctx = make_context(cfg);
    // Three rows published in epoch 1 on partition 0, offsets 0..2: the
    // first applied by both consumers, the second by billing only, the
    // third by neither.
    w->rows = {
      {1, 1, {"billing", "fulfillment"}}, {2, 1, {"billing"}}, {3, 1, {}}};
    w->newest[0] = {1, 0, 2, "e3"};
  }

  /// The broker still holds what the outbox published.
  void broker_keeps_its_log() {
    w->marks[0] = {0, 3};
    w->log[0] = {{0, "e1"}, {1, "e2"}, {2, "e3"}};
  }

  void start() {
    repairer_deps deps;
    deps.store = [x = w] { return std::make_unique<fake_epochs>(x); };
    deps.probe = [x = w] { return std::make_unique<fake_log>(x); };
    repairer = sys().spawn(repairer_with, ctx, std::move(deps));
    sched().run(); // the first round, at start
  }

  ~repairer_fixture() { caf::anon_send_exit(repairer, caf::exit_reason::kill); }
};

} // namespace

TEST_CASE("a_broker_that_lost_the_outbox_s_records_begins_a_new_epoch_and_what_"
          "a_consumer_has_not_applied_is_queued_again") {
  repairer_fixture f;
  f.w->marks[0] = {0, 0}; // a new, empty broker
  f.start();
  auto& sched = f.sched();
  {
    INFO("the first round: the witness e3 at offset 2 is gone");
    CAPTURE(f.w->epochs_begun);
    REQUIRE(f.w->epochs_begun.size() == 1);
    INFO("the reason names the partition and the missing witness");
    CHECK(f.w->epochs_begun[0].find("partition 0 ends at offset 0") !=
          std::string::npos);
    CHECK(f.w->epochs_begun[0].find("e3") != std::string::npos);
    CHECK(f.ctx->metrics->sum("broker_epochs_total") == 1);
  }
  {
    INFO("seq 1 was applied by both consumers; 2 lacks fulfillment, 3 both");
    CHECK(f.w->queued == std::vector<std::int64_t>{2, 3});
    CHECK(f.ctx->metrics->sum("repair_republished_total",
                              {{"reason", "broker_epoch"}}) == 2);
  }
  {
    INFO("the next round is repair.interval-ms away");
    CHECK(test::next_timeout_in(sched) == 1000ms);
  }
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.repairer).to(f.repairer));
  INFO("the next round finds the new epoch without a witness: no second "
       "epoch, nothing queued twice");
  CHECK(f.w->epochs_begun.size() == 1);
  CHECK(f.w->queued == std::vector<std::int64_t>{2, 3});
}

TEST_CASE("a_broker_that_still_holds_the_outbox_s_records_begins_no_epoch_and_"
          "nothing_is_queued_again_round_after_round") {
  repairer_fixture f;
  f.broker_keeps_its_log();
  f.start();
  auto& sched = f.sched();
  // Twelve rounds: the database's side runs on the 1st and the 11th.
  for (int round = 2; round <= 12; ++round) {
    CAPTURE(round);
    INFO("each round one repair.interval-ms after the last");
    CHECK(test::next_timeout_in(sched) == 1000ms);
    REQUIRE(sched.trigger_timeout());
    expect((poll_atom), from(f.repairer).to(f.repairer));
  }
  {
    INFO("the broker holds e3 at offset 2 still: twelve rounds, no epoch");
    CHECK(f.w->epochs_begun.empty());
    CHECK(f.ctx->metrics->sum("broker_epochs_total") == 0);
  }
  {
    INFO("every row was published in the current epoch: none queued again");
    CHECK(f.w->queued.empty());
  }
  INFO("the broker's side of the check ran every round");
  CHECK(f.w->probe_calls >= 12);
}

TEST_CASE("a_repairer_without_the_lease_checks_nothing_and_queues_nothing") {
  repairer_fixture f;
  f.w->lease = false;
  f.w->marks[0] = {0, 0}; // would be a lost log, were it active
  f.start();
  auto& sched = f.sched();
  REQUIRE(sched.trigger_timeout());
  expect((poll_atom), from(f.repairer).to(f.repairer));
  {
    INFO("another repairer holds the lease: this one begins no epoch and "
         "queues nothing although the broker's log is empty");
    CHECK(f.w->epochs_begun.empty());
    CHECK(f.w->queued.empty());
  }
  {
    INFO("nor does it ask the broker or the database anything but the lease");
    CHECK(f.w->probe_calls == 0);
    CHECK(f.w->store_reads == 0);
  }
  INFO("it asks for the lease again a repair.interval-ms later");
  CHECK(test::next_timeout_in(sched) == 1000ms);
}
