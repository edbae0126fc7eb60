// The partition actor, deterministically: its event sink and its DLQ parking
// are fakes, and the test coordinator runs one message at a time, so a retry
// happens exactly when the test fires its backoff. What it pins down: records
// that arrive together share one transaction, a failed batch is applied
// again one record per transaction, a transient failure is retried while the
// records behind it wait, an exhausted or permanent failure is parked before
// its offset moves (and kept while the DLQ is unreachable), a database
// outage spends no attempts, and an order's later events wait behind its
// parked one.

#include "actors/partition_worker.hpp"
#include "kafka/event_record.hpp"
#include "messages/ids.hpp"
#include "messages/tree_messages.hpp"
#include "persistence/db_error.hpp"
#include "tests/support/actor_fixture.hpp"

#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <set>

using namespace ef;
using persistence::db_errc;
using persistence::db_error;

namespace {

/// What the fake sink does for one attempt at an event.
enum class step_result { applied, order_missing, outage, transient };

/// The fake sink's script and its record of every call.
struct sink_script {
  /// Per event ID, what its next attempts do; afterwards it is applied.
  std::map<std::string, std::deque<step_result>> next;
  int failing_batches = 0;            ///< batches that fail before any applies
  std::vector<std::string> calls;     ///< "batch 0,1,2", "apply 3"
  std::map<std::string, int> applied; ///< per event ID

  apply_outcome run(const order_event& ev) {
    auto& q = next[ev.event_id];
    auto r = q.empty() ? step_result::applied : q.front();
    if (!q.empty())
      q.pop_front();
    switch (r) {
    case step_result::outage:
      throw db_error(db_errc::unavailable, "connection refused");
    case step_result::transient:
      throw db_error(db_errc::transient, "deadlock detected");
    case step_result::order_missing:
      return apply_outcome::order_missing;
    case step_result::applied:
      break;
    }
    return ++applied[ev.event_id] == 1 ? apply_outcome::applied
                                       : apply_outcome::duplicate;
  }
};

struct fake_sink : event_sink {
  std::shared_ptr<sink_script> s;
  explicit fake_sink(std::shared_ptr<sink_script> script)
      : s(std::move(script)) {}

  apply_outcome apply(const order_event& ev, const std::function<void()>&,
                      delivery_position at) override {
    s->calls.push_back("apply " + std::to_string(at.offset));
    return s->run(ev);
  }

  std::vector<apply_outcome>
  apply_batch(const std::vector<order_event>& evs,
              const std::vector<delivery_position>& at,
              const std::function<void()>&) override {
    std::string call = "batch ";
    for (auto& p : at)
      call += (call.size() > 6 ? "," : "") + std::to_string(p.offset);
    s->calls.push_back(call);
    if (s->failing_batches > 0) {
      --s->failing_batches;
      throw db_error(db_errc::transient, "could not serialize access");
    }
    // Like the real one: stops before an event whose order is missing.
    std::vector<apply_outcome> out;
    for (auto& ev : evs) {
      auto& q = s->next[ev.event_id];
      if (!q.empty() && q.front() == step_result::order_missing)
        break;
      out.push_back(s->run(ev));
    }
    return out;
  }
};

/// The fake DLQ: what was parked, with its attempts and reason.
struct dlq_script {
  struct entry {
    std::int64_t offset;
    int attempts;
    std::string kind;
    std::int64_t replay_of = 0; ///< a failed replay parks this entry again
  };
  std::vector<entry> parked;
  int unreachable = 0; ///< park() calls that fail before one succeeds
  std::map<std::string, parking::head> heads;
  /// Entries whose replay waits behind an earlier parked one.
  std::map<std::int64_t, parking::head> blockers;
  /// Events whose entries are decided (discarded, replayed).
  std::set<std::string> decided;
  std::set<std::int64_t> our_entries; ///< replays for this consumer
  std::vector<std::int64_t> released; ///< entries release_after was asked for
};

struct fake_parking : parking {
  std::shared_ptr<dlq_script> s;
  explicit fake_parking(std::shared_ptr<dlq_script> script)
      : s(std::move(script)) {}

  bool replay_is_ours(std::int64_t entry_id) override {
    return s->our_entries.count(entry_id) > 0;
  }
  std::optional<head> parked_head(const std::string& order_id) override {
    auto i = s->heads.find(order_id);
    if (i == s->heads.end())
      return std::nullopt;
    return i->second;
  }
  std::optional<head> waits_behind(std::int64_t entry_id) override {
    auto i = s->blockers.find(entry_id);
    if (i == s->blockers.end())
      return std::nullopt;
    return i->second;
  }
  parked park(const partition_record& rec, const order_event* ev,
              const failure& why, int attempts, const std::string&,
              std::int64_t replay_of) override {
    if (s->unreachable > 0) {
      --s->unreachable;
      return parked::not_stored;
    }
    if (replay_of == 0 && ev && s->decided.count(ev->event_id) > 0)
      return parked::decided;
    s->parked.push_back({rec.offset, attempts, why.kind, replay_of});
    return parked::stored;
  }
  bool release_after(std::int64_t entry_id) override {
    s->released.push_back(entry_id);
    return false;
  }
};

struct worker_fixture : test::actor_fixture {
  std::shared_ptr<sink_script> sink = std::make_shared<sink_script>();
  std::shared_ptr<dlq_script> dlq = std::make_shared<dlq_script>();
  std::shared_ptr<std::vector<std::int64_t>> done =
    std::make_shared<std::vector<std::int64_t>>();
  caf::actor member;
  caf::actor worker;

  explicit worker_fixture(int max_attempts = 5) {
    auto cfg = config::settings{};
    cfg.consumer.max_attempts = max_attempts;
    auto ctx = make_context(cfg);
    auto d = done;
    // Stands in for the group member: only what it is told is done may be
    // committed, so this list is the offsets that may move.
    // The list is passed as an argument, not captured: CAF 0.17 spawns a
    // function without arguments through a null argument tuple (UBSan).
    member = sys().spawn(
      [](decltype(d) out) -> caf::behavior {
        return {[out](record_done& r) { out->push_back(r.offset); }};
      },
      d);
    partition_worker_deps deps;
    auto s = sink;
    deps.sink = [s] { return std::make_unique<fake_sink>(s); };
    auto q = dlq;
    deps.dlq = [q](const partition_faults&) {
      return std::make_unique<fake_parking>(q);
    };
    worker = sys().spawn(partition_worker_with, ctx, std::string("test"), 0,
                         member, std::move(deps));
  }

  ~worker_fixture() {
    caf::anon_send_exit(worker, caf::exit_reason::kill);
    caf::anon_send_exit(member, caf::exit_reason::kill);
  }

  /// Hands the worker a record of event `ev` at `offset`, with `headers`.
  void deliver(std::int64_t offset, const order_event& ev,
               std::vector<std::pair<std::string, std::string>> headers = {}) {
    partition_record r;
    r.partition = 0;
    r.offset = offset;
    r.key = ev.order_id;
    r.value = kafka::encode_value(ev);
    r.event_id_header = ev.event_id;
    r.headers = std::move(headers);
    caf::anon_send(worker, std::move(r));
  }

  /// Hands the worker a DLQ replay of `ev` for entry `entry` at `offset`.
  void deliver_replay(std::int64_t offset, const order_event& ev,
                      std::int64_t entry) {
    deliver(
      offset, ev,
      {{"dlq.replay_of", std::to_string(entry)}, {"event_id", ev.event_id}});
  }

  /// Runs every message that is not waiting for a timeout.
  void settle() { run(10000); }

  /// Fires the pending retry and runs what follows.
  void next_retry() {
    REQUIRE(sched().trigger_timeouts() > 0);
    settle();
  }

  std::vector<std::int64_t> dones() const { return *done; }
};

order_event event_of(const std::string& order_id) {
  return {new_uuid_v7(),
          "OrderCreated",
          order_id,
          "2026-12-04T10:00:00Z",
          R"({"total_cents":3000})",
          ""};
}

order_event event() {
  return event_of(new_uuid_v7());
}

using offsets = std::vector<std::int64_t>;
using calls = std::vector<std::string>;

} // namespace

TEST_CASE("records_that_arrive_together_share_one_transaction_and_are_"
          "reported_done_in_offset_order") {
  worker_fixture f;
  for (int i = 0; i < 3; ++i)
    f.deliver(i, event());
  f.settle();
  CHECK(f.sink->calls == calls{"batch 0,1,2"});
  CHECK(f.dones() == offsets{0, 1, 2});
}

TEST_CASE("a_failed_batch_is_applied_again_one_record_per_transaction_then_"
          "batching_resumes") {
  worker_fixture f;
  f.sink->failing_batches = 1;
  for (int i = 0; i < 3; ++i)
    f.deliver(i, event());
  f.settle();
  // No backoff for the fallback: the same records, one transaction each, in
  // order, so a poison record among them is isolated as without batches.
  CHECK(f.sink->calls == calls{"batch 0,1,2", "apply 0", "apply 1", "apply 2"});
  CHECK(f.dones() == offsets{0, 1, 2});
  f.deliver(3, event());
  f.deliver(4, event());
  f.settle();
  CHECK(f.sink->calls.back() == "batch 3,4");
  CHECK(f.dones() == offsets{0, 1, 2, 3, 4});
}

TEST_CASE("a_transient_failure_is_retried_after_its_backoff_and_the_records_"
          "behind_it_wait") {
  worker_fixture f;
  auto first = event();
  f.sink->next[first.event_id] = {step_result::order_missing,
                                  step_result::transient};
  f.deliver(0, first);
  f.settle();
  f.deliver(1, event());
  f.settle();
  // Waiting for its backoff: nothing is done, and the record behind it has
  // not been tried (per-partition order holds).
  CHECK(f.sink->calls == calls{"apply 0"});
  CHECK(f.dones().empty());
  f.next_retry();
  CHECK(f.sink->calls == calls{"apply 0", "apply 0"});
  CHECK(f.dones().empty());
  f.next_retry();
  CHECK(f.sink->calls == calls{"apply 0", "apply 0", "apply 0", "apply 1"});
  CHECK(f.dones() == offsets{0, 1});
  CHECK(f.dlq->parked.empty());
}

TEST_CASE("an_event_that_keeps_failing_is_parked_at_max_attempts_and_only_"
          "then_does_its_offset_move") {
  worker_fixture f(3);
  auto poison = event();
  f.sink->next[poison.event_id] = {step_result::order_missing,
                                   step_result::order_missing,
                                   step_result::order_missing};
  f.deliver(0, poison);
  f.settle();
  f.next_retry();
  CHECK(f.dones().empty());
  CHECK(f.dlq->parked.empty());
  f.next_retry(); // the third attempt: parked, then done
  REQUIRE(f.dlq->parked.size() == 1);
  CHECK(f.dlq->parked[0].offset == 0);
  CHECK(f.dlq->parked[0].attempts == 3);
  CHECK(f.dlq->parked[0].kind == "order_missing");
  CHECK(f.dones() == offsets{0});
  CHECK(f.sink->applied.count(poison.event_id) == 0);
}

TEST_CASE("a_database_outage_is_retried_for_as_long_as_it_lasts_without_"
          "spending_attempts") {
  worker_fixture f(2);
  auto ev = event();
  f.sink->next[ev.event_id] = std::deque<step_result>(6, step_result::outage);
  f.deliver(0, ev);
  f.settle();
  for (int i = 0; i < 6; ++i) {
    CHECK(f.dones().empty());
    f.next_retry();
  }
  CHECK(f.dlq->parked.empty()); // 7 attempts, max-attempts 2: none spent
  CHECK(f.sink->applied[ev.event_id] == 1);
  CHECK(f.dones() == offsets{0});
}

TEST_CASE("an_undecodable_record_is_parked_at_once_and_kept_while_the_dlq_is_"
          "unreachable") {
  worker_fixture f;
  f.dlq->unreachable = 2;
  partition_record junk;
  junk.offset = 0;
  junk.key = "not-an-order";
  junk.value = "{not json";
  caf::anon_send(f.worker, junk);
  f.deliver(1, event());
  f.settle();
  // Parking failed: the record stays, its offset does not move, and the
  // record behind it waits.
  CHECK(f.dones().empty());
  CHECK(f.sink->calls.empty());
  f.next_retry();
  CHECK(f.dones().empty());
  f.next_retry();
  REQUIRE(f.dlq->parked.size() == 1);
  CHECK(f.dlq->parked[0].kind == "undecodable");
  // Each try decoded it again (a permanent failure spends no backoff
  // budget, but the entry counts every try it took to park it).
  CHECK(f.dlq->parked[0].attempts == 3);
  CHECK(f.dones() == offsets{0, 1});
  CHECK(f.sink->calls == calls{"apply 1"});
}

TEST_CASE("a_later_event_of_an_order_with_a_parked_event_is_parked_behind_it_"
          "and_never_applied") {
  worker_fixture f;
  auto order = new_uuid_v7();
  f.dlq->heads[order] = parking::head{new_uuid_v7(), 7};
  auto later = event_of(order);
  auto other = event();
  f.deliver(0, later);
  f.deliver(1, other);
  f.settle();
  REQUIRE(f.dlq->parked.size() == 1);
  CHECK(f.dlq->parked[0].offset == 0);
  CHECK(f.dlq->parked[0].kind == "parked_behind");
  // The batch stopped before the blocked record; the other order flows.
  CHECK(f.sink->calls == calls{"apply 1"});
  CHECK(f.sink->applied.count(later.event_id) == 0);
  CHECK(f.dones() == offsets{0, 1});
}

TEST_CASE("a_replay_is_applied_and_releases_only_in_the_consumer_it_is_for_"
          "and_is_skipped_before_decoding_elsewhere") {
  worker_fixture f;
  f.dlq->our_entries = {7};
  auto order = new_uuid_v7();
  // Another consumer's entry: skipped, nothing applied, nothing released,
  // done (its offset may move).
  auto theirs = event_of(order);
  f.deliver_replay(0, theirs, 8);
  f.settle();
  CHECK(f.sink->calls.empty());
  CHECK(f.dlq->released.empty());
  CHECK(f.dones() == offsets{0});
  // Ours: applied, then the next parked event of the order is released.
  auto ours = event_of(order);
  f.deliver_replay(1, ours, 7);
  f.settle();
  CHECK(f.sink->applied[ours.event_id] == 1);
  CHECK(f.dlq->released == std::vector<std::int64_t>{7});
  // A replay of another consumer's undecodable record parks nothing here:
  // whose it is is decided before the value is read.
  partition_record junk;
  junk.partition = 0;
  junk.offset = 2;
  junk.key = order;
  junk.value = "{not json";
  junk.headers = {{"dlq.replay_of", "9"}};
  caf::anon_send(f.worker, std::move(junk));
  f.settle();
  CHECK(f.dlq->parked.empty());
  CHECK(f.dones() == offsets{0, 1, 2});
}

TEST_CASE("a_replay_of_an_entry_behind_a_parked_one_waits_behind_it_and_is_"
          "never_applied_nor_releases") {
  worker_fixture f;
  f.dlq->our_entries = {7};
  auto order = new_uuid_v7();
  // Entry 3 of the same order is parked before entry 7.
  f.dlq->blockers[7] = parking::head{new_uuid_v7(), 3};
  auto later = event_of(order);
  f.deliver_replay(0, later, 7);
  f.settle();
  INFO("the replay is not applied, and releases nothing");
  CHECK(f.sink->applied.count(later.event_id) == 0);
  CHECK(f.dlq->released.empty());
  INFO("its entry is parked again behind the earlier one; the offset moves");
  REQUIRE(f.dlq->parked.size() == 1);
  CHECK(f.dlq->parked[0].kind == "parked_behind");
  CHECK(f.dlq->parked[0].replay_of == 7);
  CHECK(f.dones() == offsets{0});
}

TEST_CASE("a_decided_event_delivered_again_behind_a_parked_head_is_a_"
          "duplicate_and_parks_nothing") {
  worker_fixture f;
  auto order = new_uuid_v7();
  f.dlq->heads[order] = parking::head{new_uuid_v7(), 1};
  auto discarded = event_of(order);
  f.dlq->decided = {discarded.event_id};
  f.deliver(0, discarded);
  f.settle();
  INFO("nothing applied, nothing parked anew, the offset moves");
  CHECK(f.sink->applied.count(discarded.event_id) == 0);
  CHECK(f.dlq->parked.empty());
  CHECK(f.dones() == offsets{0});
}
