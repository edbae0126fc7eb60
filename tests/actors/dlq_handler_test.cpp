// The DLQ handler, deterministically: its store is a fake over in-memory
// entries, the replay producer and the DLQ topic's consumer are fakes, and
// every call of theirs goes into one log, in order (tests/support/
// dlq_fakes.hpp). CAF's test coordinator runs the handler's poll loop one
// poll at a time (expect) on a clock that moves only when the test says.
// What it pins down: a replay a crash interrupted is finished at the next
// start; one left replaying is published by the sweep after its wait; a
// replay no broker acknowledged for dlq.replay-give-up-ms is parked again
// and counted; a DLQ record is stored before its offset is committed.

#include "actors/dlq_handler.hpp"
#include "messages/record_headers.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/caf_dsl.hpp"
#include "tests/support/dlq_fakes.hpp"

#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/dlq_messages.hpp>

using namespace ef;
using namespace ef::test;

namespace {

struct handler_fixture : test::dsl_fixture {
  std::shared_ptr<dlq_world> w = std::make_shared<dlq_world>();
  context_ptr ctx = test::actor_fixture::make_context(config::settings{});
  dlq_handler_actor handler;

  /// Spawns the handler and runs its start, which runs its first poll
  /// (and first sweep) at once; its next poll waits in its mailbox.
  void start() {
    dlq_handler_deps deps;
    auto wd = w;
    deps.store = [wd] { return std::make_unique<fake_dlq_store>(wd); };
    deps.producer = [wd](const std::string& topic) {
      return std::make_unique<fake_replay_producer>(wd, topic);
    };
    deps.consumer = [wd](kafka::group_client::callbacks) {
      return std::make_unique<fake_dlq_consumer>(wd);
    };
    handler = sys.spawn(dlq_handler_with, ctx, std::move(deps));
    sched.run_once();
  }

  ~handler_fixture() override {
    // Its poll loop never runs dry: stop it before the fixture runs what
    // is left.
    caf::anon_send_exit(handler, caf::exit_reason::kill);
  }

  void poll() { expect((poll_atom), from(handler).to(handler).with(_)); }
};

using calls = std::vector<std::string>;

} // namespace

TEST_CASE_METHOD(handler_fixture,
                 "a_replay_a_crash_interrupted_is_finished_at_the_next_start") {
  // The previous handler recorded the intent and crashed before its
  // publish was marked.
  w->add(7, "order-a", dlq_status::replaying);
  start();
  CAPTURE(w->log);
  INFO("the start's sweep publishes it and marks it");
  CHECK(w->log == calls{"publish 7 to orders", "finish_replay 7"});
  CHECK(w->status(7) == dlq_status::replayed);
}

TEST_CASE_METHOD(handler_fixture,
                 "a_replay_left_replaying_is_published_by_the_next_sweep_"
                 "after_its_wait") {
  start();
  // A desk's publish failed (or a command line recorded a release without
  // a broker): the entry is replaying.
  w->add(7, "order-a", dlq_status::replaying);
  poll();
  INFO("no sweep before its 5 s wait is over");
  CHECK(w->log.empty());
  advance_time(std::chrono::seconds(6));
  poll();
  CAPTURE(w->log);
  INFO("the sweep published it and marked it");
  CHECK(w->log == calls{"publish 7 to orders", "finish_replay 7"});
  CHECK(w->status(7) == dlq_status::replayed);
}

TEST_CASE_METHOD(handler_fixture,
                 "a_replay_no_broker_acknowledged_for_its_give_up_time_is_"
                 "parked_again_and_counted") {
  // Every publish fails: the replay stays replaying, its error kept.
  w->add(7, "order-a", dlq_status::replaying);
  w->failing_publishes = 1000;
  start();
  CHECK(w->status(7) == dlq_status::replaying);
  CHECK(w->entries[7].replay_error == "Local: Message timed out");
  // Past dlq.replay-give-up-ms: the next sweep parks it again.
  w->overdue.insert(7);
  advance_time(std::chrono::seconds(6));
  poll();
  CAPTURE(w->log);
  INFO("given up before the sweep would publish it once more");
  CHECK(w->log.at(w->log.size() - 1) == "give_up 7");
  CHECK(w->status(7) == dlq_status::parked);
  INFO("the series names the consumer's given-up replays");
  CHECK(ctx->metrics
          ->snapshot()[R"(dlq_replays_given_up_total{consumer="billing"})"] ==
        1);
}

TEST_CASE_METHOD(handler_fixture,
                 "a_dlq_record_is_stored_before_its_offset_is_committed") {
  partition_record r;
  r.partition = 0;
  r.offset = 5;
  r.key = "order-a";
  r.value = "{}";
  r.headers = {
    {record_header::dlq_consumer, "billing"},
    {record_header::event_id, "0190a5c4-1111-7abc-8def-0123456789ab"},
    {record_header::dlq_source_topic, "elsewhere"}};
  start();
  w->topic.push_back(r);
  poll();
  CAPTURE(w->log);
  INFO("the entry is parked, then the next offset committed");
  CHECK(w->log == calls{"park billing/0190a5c4-1111-7abc-8def-0123456789ab",
                        "commit 0:6"});
  INFO("a replay goes to the topic this DLQ belongs to, not the header's");
  CHECK(w->entries.at(1).source_topic == "orders");
}
