// A DLQ desk, deterministically, on the fakes of tests/support/dlq_fakes.hpp:
// CAF's test coordinator delivers each command (expect) and the test reads
// the one answer. What it pins down: a replay records its intent, then
// publishes, then marks, and answers once; a replay whose publish fails
// answers "pending"; only the head of an order can be replayed, and a
// decision on an entry behind it changes that entry alone; discarding the
// head releases the next parked entry of the same order and consumer; a
// replay no broker acknowledged can be discarded; commands the entry's
// state does not allow are refused and change nothing.

#include "actors/dlq_desk.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/caf_dsl.hpp"
#include "tests/support/dlq_fakes.hpp"

#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/dlq_messages.hpp>

#include <nlohmann/json.hpp>

using namespace ef;
using namespace ef::test;

namespace {

struct desk_fixture : test::dsl_fixture {
  std::shared_ptr<dlq_world> w = std::make_shared<dlq_world>();
  context_ptr ctx = test::actor_fixture::make_context(config::settings{});
  dlq_desk_actor desk;

  void start() {
    dlq_desk_deps deps;
    auto wd = w;
    deps.store = [wd] { return std::make_unique<fake_dlq_store>(wd); };
    deps.producer = [wd](const std::string& topic) {
      return std::make_unique<fake_replay_producer>(wd, topic);
    };
    desk = sys.spawn(dlq_desk_with, ctx, std::move(deps));
    run();
  }

  /// Sends the command and runs it.
  void command(dlq_verb verb, std::int64_t id) {
    self->request(desk, caf::infinite, dlq_command{verb, id, "", "test"});
    expect((dlq_command), from(self).to(desk).with(_));
  }

  /// The answer waiting in the test's mailbox, parsed (taken out).
  nlohmann::json reply() {
    auto r = nlohmann::json::parse(std::get<0>(extract<dlq_reply>(self)).json);
    expect((dlq_reply), from(desk).to(self).with(_));
    return r;
  }

  /// A refusal waiting in the test's mailbox: its message (taken out).
  std::string refusal() {
    auto err = std::get<0>(extract<caf::error>(self));
    expect((caf::error), from(desk).to(self).with(_));
    CHECK(err == make_api_error(api_errc::conflict, ""));
    return to_string(err);
  }

  /// The command's one answer was taken: nothing else is waiting.
  void no_second_answer() {
    disallow((dlq_reply), from(desk).to(self));
    disallow((caf::error), from(desk).to(self));
  }
};

using calls = std::vector<std::string>;

} // namespace

TEST_CASE_METHOD(desk_fixture,
                 "a_replay_records_its_intent_then_publishes_then_marks_and_"
                 "answers_once") {
  w->add(7, "order-a", dlq_status::parked);
  start();
  command(dlq_verb::replay, 7);
  CAPTURE(w->log);
  INFO("intent, publish to the source topic, mark: in this order");
  CHECK(w->log ==
        calls{"begin_replay 7", "publish 7 to orders", "finish_replay 7"});
  CHECK(w->status(7) == dlq_status::replayed);
  auto r = reply();
  CAPTURE(r.dump());
  INFO("the answer says it is done and replayed");
  CHECK(r["done"] == true);
  CHECK(r["status"] == dlq_status::replayed);
  no_second_answer();
}

TEST_CASE_METHOD(desk_fixture,
                 "a_replay_whose_publish_fails_answers_pending_and_stays_"
                 "replaying_with_its_error") {
  w->add(7, "order-a", dlq_status::parked);
  w->failing_publishes = 1;
  start();
  command(dlq_verb::replay, 7);
  CAPTURE(w->log);
  CHECK(w->log ==
        calls{"begin_replay 7", "publish 7 to orders", "replay_failed 7"});
  CHECK(w->status(7) == dlq_status::replaying);
  CHECK(w->entries[7].replay_error == "Local: Message timed out");
  auto r = reply();
  CAPTURE(r.dump());
  INFO("the answer says the intent stands, not done");
  CHECK(r["done"] == false);
  CHECK(r["status"] == dlq_status::replaying);
  no_second_answer();
}

TEST_CASE_METHOD(desk_fixture,
                 "a_decision_on_an_entry_behind_its_head_changes_that_entry_"
                 "alone") {
  w->add(1, "order-a", dlq_status::parked);
  w->add(2, "order-a", dlq_status::parked);
  w->add(3, "order-a", dlq_status::parked);
  w->add(4, "order-a", dlq_status::parked, "fulfillment");
  start();
  command(dlq_verb::discard, 3);
  auto r = reply();
  CAPTURE(r.dump(), w->log);
  INFO("the third is discarded; nothing is replayed or published");
  CHECK(w->log == calls{"discard 3"});
  CHECK_THAT(r["result"].get<std::string>(),
             Catch::Contains("entry 1") &&
               Catch::Contains("nothing else changed"));
  command(dlq_verb::replay, 2);
  auto why = refusal();
  CAPTURE(why);
  INFO("the second waits behind the head, and the answer names it");
  CHECK_THAT(why, Catch::Contains("waits behind entry 1"));
  CHECK(w->log == calls{"discard 3"});
  CHECK(w->status(1) == dlq_status::parked);
  CHECK(w->status(2) == dlq_status::parked);
  no_second_answer();
}

TEST_CASE_METHOD(desk_fixture,
                 "discarding_the_head_releases_the_next_parked_entry_of_its_"
                 "order_and_consumer_only") {
  w->add(1, "order-a", dlq_status::parked);
  w->add(2, "order-a", dlq_status::discarded);
  w->add(3, "order-a", dlq_status::parked);
  w->add(4, "order-a", dlq_status::parked, "fulfillment");
  w->add(5, "order-b", dlq_status::parked);
  start();
  command(dlq_verb::discard, 1);
  auto r = reply();
  CAPTURE(r.dump(), w->log);
  INFO("discarded, then the next PARKED entry (past the discarded one) "
       "replayed");
  CHECK(w->log == calls{"discard 1", "begin_replay 3", "publish 3 to orders",
                        "finish_replay 3"});
  INFO("another consumer's and another order's entries stay parked");
  CHECK(w->status(4) == dlq_status::parked);
  CHECK(w->status(5) == dlq_status::parked);
  CHECK(r["status"] == dlq_status::discarded);
  CHECK_THAT(r["result"].get<std::string>(),
             Catch::Contains("released the next parked entry"));
  no_second_answer();
}

TEST_CASE_METHOD(desk_fixture,
                 "a_replay_no_broker_acknowledged_can_be_discarded") {
  w->add(7, "order-a", dlq_status::replaying);
  start();
  command(dlq_verb::discard, 7);
  auto r = reply();
  CAPTURE(r.dump(), w->log);
  CHECK(w->status(7) == dlq_status::discarded);
  // Once the broker acknowledged a replay, it may be applied: refused.
  w->add(8, "order-b", dlq_status::replaying);
  w->published.insert(8);
  command(dlq_verb::discard, 8);
  CHECK_THAT(refusal(), Catch::Contains("replaying"));
  CHECK(w->status(8) == dlq_status::replaying);
  no_second_answer();
}

TEST_CASE_METHOD(desk_fixture,
                 "a_replay_or_discard_the_entry_does_not_allow_is_refused_and_"
                 "changes_nothing") {
  w->add(7, "order-a", dlq_status::replayed);
  start();
  command(dlq_verb::replay, 7);
  refusal();
  command(dlq_verb::discard, 7);
  refusal();
  self->request(desk, caf::infinite,
                dlq_command{dlq_verb::replay, 99, "", "test"});
  expect((dlq_command), from(self).to(desk).with(_));
  expect((caf::error),
         from(desk).to(self).with(make_api_error(api_errc::not_found, "")));
  no_second_answer();
  CAPTURE(w->log);
  INFO("nothing was begun, published or discarded");
  CHECK(w->log.empty());
  CHECK(w->status(7) == dlq_status::replayed);
}
