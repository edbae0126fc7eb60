// The DLQ handler, deterministically: its store is a fake over in-memory
// entries, the replay producer and the DLQ topic's consumer are fakes, and
// every call of theirs goes into one log, in order. CAF's test coordinator
// runs the handler's poll loop one poll at a time (expect) on a clock that
// moves only when the test says. What it pins down: a replay records its
// intent, then publishes, then marks, and answers once; a replay whose
// publish fails stays "replaying" and the sweep finishes it after its wait;
// a replay a crash interrupted is finished at the next start; a discard
// releases the next parked event of its order; a command the entry's state
// does not allow is refused and changes nothing; a DLQ record is stored
// before its offset is committed.

#include "actors/dlq_handler.hpp"
#include "messages/record_headers.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/caf_dsl.hpp"

#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/dlq_messages.hpp>

#include <nlohmann/json.hpp>

#include <deque>

using namespace ef;
using persistence::dlq_entry;

namespace {

/// The DLQ's entries, the DLQ topic, and what was done to them, in order.
struct dlq_world {
  std::map<std::int64_t, dlq_entry> entries;
  std::vector<std::string> log;
  std::deque<partition_record> topic; ///< DLQ records not yet polled
  int failing_publishes = 0;          ///< the next n publishes fail
  std::int64_t next_offset = 100;     ///< where the next replay lands

  void add(std::int64_t id, const std::string& order, const char* status) {
    dlq_entry e;
    e.id = id;
    e.consumer = "billing";
    e.event_id = "event-" + std::to_string(id);
    e.order_key = e.key = order;
    e.value = "{}";
    e.source_topic = "orders";
    e.status = status;
    entries[id] = e;
  }
  std::string status(std::int64_t id) { return entries.at(id).status; }
};

struct fake_dlq_store : persistence::dlq_records {
  std::shared_ptr<dlq_world> w;
  explicit fake_dlq_store(std::shared_ptr<dlq_world> wd) : w(std::move(wd)) {}

  std::int64_t park(const dlq_entry& e, bool) override {
    w->log.push_back("park " + e.consumer + "/" + e.event_id);
    auto id = static_cast<std::int64_t>(w->entries.size()) + 1;
    w->entries[id] = e;
    w->entries[id].id = id;
    w->entries[id].status = dlq_status::parked;
    return id;
  }
  std::set<std::string> parked_orders(const std::string& consumer) override {
    std::set<std::string> out;
    for (auto& [id, e] : w->entries)
      if (e.consumer == consumer && e.status == dlq_status::parked)
        out.insert(e.order_key);
    return out;
  }
  std::optional<dlq_entry> head_of(const std::string& consumer,
                                   const std::string& order_key) override {
    for (auto& [id, e] : w->entries)
      if (e.consumer == consumer && e.order_key == order_key &&
          e.status == dlq_status::parked)
        return e;
    return std::nullopt;
  }
  std::optional<std::string> status_of(const std::string& consumer,
                                       const std::string& event_id) override {
    for (auto& [id, e] : w->entries)
      if (e.consumer == consumer && e.event_id == event_id)
        return e.status;
    return std::nullopt;
  }
  std::optional<dlq_entry> get(std::int64_t id) override {
    auto i = w->entries.find(id);
    if (i == w->entries.end())
      return std::nullopt;
    return i->second;
  }
  std::vector<dlq_entry> list(const std::string& status, int) override {
    std::vector<dlq_entry> out;
    for (auto& [id, e] : w->entries)
      if (status.empty() || e.status == status)
        out.insert(out.begin(), e);
    return out;
  }
  std::vector<persistence::dlq_group> groups() override { return {}; }
  std::vector<dlq_entry> in_group(const std::string&) override { return {}; }
  std::optional<dlq_entry> begin_replay(std::int64_t id,
                                        std::string& refused) override {
    auto e = get(id);
    if (!e || e->status != dlq_status::parked) {
      refused = e ? e->status : "";
      return std::nullopt;
    }
    w->log.push_back("begin_replay " + std::to_string(id));
    w->entries[id].status = dlq_status::replaying;
    return w->entries[id];
  }
  std::optional<std::pair<std::string, std::string>>
  replay_target(std::int64_t id) override {
    auto e = get(id);
    if (!e)
      return std::nullopt;
    return std::make_pair(e->consumer, e->status);
  }
  void finish_replay(std::int64_t id, std::int32_t, std::int64_t,
                     const std::string&, const std::string&,
                     const std::string&) override {
    w->log.push_back("finish_replay " + std::to_string(id));
    if (w->entries[id].status == dlq_status::replaying)
      w->entries[id].status = dlq_status::replayed;
  }
  void record_action(std::int64_t id, const std::string&, const std::string&,
                     const std::string&) override {
    w->log.push_back("record_action " + std::to_string(id));
  }
  std::vector<dlq_entry> claim_stale_replays(std::chrono::milliseconds,
                                             int limit) override {
    std::vector<dlq_entry> out;
    for (auto& [id, e] : w->entries)
      if (e.status == dlq_status::replaying &&
          static_cast<int>(out.size()) < limit)
        out.push_back(e);
    return out;
  }
  persistence::discard_result discard(std::int64_t id,
                                      const std::string&) override {
    if (!get(id) || w->entries[id].status != dlq_status::parked)
      return persistence::discard_result::not_parked;
    w->log.push_back("discard " + std::to_string(id));
    w->entries[id].status = dlq_status::discarded;
    return persistence::discard_result::discarded;
  }
  std::vector<std::int64_t> orphaned_heads(int) override { return {}; }
};

struct fake_replay_producer : kafka::record_publisher {
  std::shared_ptr<dlq_world> w;
  std::string topic;
  fake_replay_producer(std::shared_ptr<dlq_world> wd, std::string t)
      : w(std::move(wd)), topic(std::move(t)) {}

  kafka::delivery publish_raw(
    const std::string&, const std::string&,
    const std::vector<std::pair<std::string, std::string>>& headers) override {
    std::string of;
    for (auto& [k, v] : headers)
      if (k == record_header::dlq_replay_of)
        of = v;
    w->log.push_back("publish " + of + " to " + topic);
    if (w->failing_publishes > 0) {
      --w->failing_publishes;
      return {false, "Local: Message timed out", -1, -1};
    }
    return {true, "", 0, w->next_offset++};
  }
};

struct fake_dlq_consumer : kafka::group_client {
  std::shared_ptr<dlq_world> w;
  explicit fake_dlq_consumer(std::shared_ptr<dlq_world> wd)
      : w(std::move(wd)) {}

  std::optional<partition_record> poll(int) override {
    if (w->topic.empty())
      return std::nullopt;
    auto r = w->topic.front();
    w->topic.pop_front();
    return r;
  }
  caf::error commit(
    const std::vector<std::pair<std::int32_t, std::int64_t>>& next) override {
    for (auto& [p, o] : next)
      w->log.push_back("commit " + std::to_string(p) + ":" + std::to_string(o));
    return {};
  }
  std::int64_t committed(std::int32_t) override { return -1; }
  void seek(std::int32_t, std::int64_t) override {}
  void restart_at(const std::map<std::int32_t, std::int64_t>&,
                  const std::set<std::int32_t>&) override {}
  watermarks query_watermarks(std::int32_t) override { return {}; }
  void pause(std::int32_t) override {}
  void resume(std::int32_t) override {}
  void close() override {}
};

struct dlq_fixture : test::dsl_fixture {
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

  ~dlq_fixture() override {
    // Its poll loop never runs dry: stop it before the fixture runs what
    // is left.
    caf::anon_send_exit(handler, caf::exit_reason::kill);
  }

  void command(dlq_verb verb, std::int64_t id) {
    self->request(handler, caf::infinite, dlq_command{verb, id, "", "test"});
  }

  /// The reply waiting in the test's mailbox, parsed (not taken out).
  nlohmann::json reply() {
    return nlohmann::json::parse(std::get<0>(extract<dlq_reply>(self)).json);
  }

  /// The command's one answer was taken: nothing else is waiting.
  void no_second_answer() {
    disallow((dlq_reply), from(handler).to(self));
    disallow((caf::error), from(handler).to(self));
  }
};

using calls = std::vector<std::string>;

} // namespace

TEST_CASE_METHOD(dlq_fixture,
                 "a_replay_records_its_intent_then_publishes_then_marks_and_"
                 "answers_once") {
  w->add(7, "order-a", dlq_status::parked);
  start();
  command(dlq_verb::replay, 7);
  expect((poll_atom), from(handler).to(handler).with(_));
  expect((dlq_command), from(self).to(handler).with(_));
  CAPTURE(w->log);
  INFO("intent, publish to the source topic, mark: in this order");
  CHECK(w->log ==
        calls{"begin_replay 7", "publish 7 to orders", "finish_replay 7"});
  INFO("the entry is replayed");
  CHECK(w->status(7) == dlq_status::replayed);
  auto r = reply();
  CAPTURE(r.dump());
  INFO("the answer says it is done and replayed");
  CHECK(r["done"] == true);
  CHECK(r["status"] == dlq_status::replayed);
  expect((dlq_reply), from(handler).to(self).with(_));
  no_second_answer();
}

TEST_CASE_METHOD(dlq_fixture,
                 "a_replay_whose_publish_fails_stays_replaying_and_the_sweep_"
                 "finishes_it_after_its_wait") {
  w->add(7, "order-a", dlq_status::parked);
  w->failing_publishes = 1;
  start();
  command(dlq_verb::replay, 7);
  expect((poll_atom), from(handler).to(handler).with(_));
  expect((dlq_command), from(self).to(handler).with(_));
  CAPTURE(w->log);
  INFO("the failed publish is noted, the entry is not marked");
  CHECK(w->log ==
        calls{"begin_replay 7", "publish 7 to orders", "record_action 7"});
  CHECK(w->status(7) == dlq_status::replaying);
  auto r = reply();
  CAPTURE(r.dump());
  INFO("the answer says the intent stands, not done");
  CHECK(r["done"] == false);
  CHECK(r["status"] == dlq_status::replaying);
  expect((dlq_reply), from(handler).to(self).with(_));
  no_second_answer();
  // The sweep waits 5 s between runs: not yet.
  expect((poll_atom), from(handler).to(handler).with(_));
  INFO("no sweep before its wait is over");
  CHECK(w->log.size() == 3);
  advance_time(std::chrono::seconds(6));
  expect((poll_atom), from(handler).to(handler).with(_));
  INFO("the sweep published it again and marked it");
  CHECK(w->log == calls{"begin_replay 7", "publish 7 to orders",
                        "record_action 7", "publish 7 to orders",
                        "finish_replay 7"});
  CHECK(w->status(7) == dlq_status::replayed);
}

TEST_CASE_METHOD(dlq_fixture,
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

TEST_CASE_METHOD(dlq_fixture,
                 "a_discard_releases_the_next_parked_event_of_its_order") {
  w->add(1, "order-a", dlq_status::parked);
  w->add(2, "order-a", dlq_status::parked);
  w->add(3, "order-b", dlq_status::parked);
  start();
  command(dlq_verb::discard, 1);
  expect((poll_atom), from(handler).to(handler).with(_));
  expect((dlq_command), from(self).to(handler).with(_));
  CAPTURE(w->log);
  INFO("discarded, then the order's next parked event replayed");
  CHECK(w->log == calls{"discard 1", "begin_replay 2", "publish 2 to orders",
                        "finish_replay 2"});
  INFO("another order's parked event stays parked");
  CHECK(w->status(3) == dlq_status::parked);
  auto r = reply();
  CAPTURE(r.dump());
  INFO("the answer says discarded and released");
  CHECK(r["status"] == dlq_status::discarded);
  CHECK_THAT(r["result"].get<std::string>(),
             Catch::Contains("released the next parked event"));
  expect((dlq_reply), from(handler).to(self).with(_));
  no_second_answer();
}

TEST_CASE_METHOD(dlq_fixture,
                 "a_replay_or_discard_the_entry_does_not_allow_is_refused_and_"
                 "changes_nothing") {
  w->add(7, "order-a", dlq_status::replayed);
  start();
  command(dlq_verb::replay, 7);
  command(dlq_verb::discard, 7);
  command(dlq_verb::replay, 99);
  expect((poll_atom), from(handler).to(handler).with(_));
  expect((dlq_command), from(self).to(handler).with(_));
  expect((caf::error),
         from(handler).to(self).with(make_api_error(api_errc::conflict, "")));
  expect((dlq_command), from(self).to(handler).with(_));
  expect((caf::error),
         from(handler).to(self).with(make_api_error(api_errc::conflict, "")));
  expect((dlq_command), from(self).to(handler).with(_));
  expect((caf::error),
         from(handler).to(self).with(make_api_error(api_errc::not_found, "")));
  no_second_answer();
  CAPTURE(w->log);
  INFO("nothing was begun, published or discarded");
  CHECK(w->log.empty());
  CHECK(w->status(7) == dlq_status::replayed);
}

TEST_CASE_METHOD(dlq_fixture,
                 "a_dlq_record_is_stored_before_its_offset_is_committed") {
  partition_record r;
  r.partition = 0;
  r.offset = 5;
  r.key = "order-a";
  r.value = "{}";
  r.headers = {
    {record_header::dlq_consumer, "billing"},
    {record_header::event_id, "0190a5c4-1111-7abc-8def-0123456789ab"},
    {record_header::dlq_source_topic, "orders"}};
  start();
  w->topic.push_back(r);
  expect((poll_atom), from(handler).to(handler).with(_));
  CAPTURE(w->log);
  INFO("the entry is parked, then the next offset committed");
  CHECK(w->log == calls{"park billing/0190a5c4-1111-7abc-8def-0123456789ab",
                        "commit 0:6"});
}
