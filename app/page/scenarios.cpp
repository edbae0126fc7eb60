#include "app/page/scenarios.hpp"

#include "kafka/offsets.hpp"
#include "messages/tree_messages.hpp"
#include "persistence/dlq_store.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/dlq_messages.hpp>
#include <eventforge/messages/order_messages.hpp>

#include <random>
#include <thread>

namespace ef::app {

namespace {

std::string random_hex(int digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < digits; ++i)
    out += hex[rng() & 15];
  return out;
}

bool consumer_side(crash_point p) {
  return p == crash_point::consumer_before_db_commit ||
         p == crash_point::consumer_after_db_before_offset ||
         p == crash_point::dlq_after_dlq_ack_before_offset ||
         p == crash_point::dlq_replay_after_mark_before_publish ||
         p == crash_point::dlq_replay_after_publish_before_mark;
}

/// How often and how long the follow-up of a poison run looks for the
/// parked entry before it gives up (the page then shows it still parked).
constexpr auto dlq_poll = std::chrono::milliseconds(200);
constexpr int dlq_polls = 600;

} // namespace

const std::vector<scenario>& scenarios() {
  static const std::vector<scenario> all{
    {"none", "No failure", std::nullopt, false,
     "The order takes the whole path once: one commit of the order and its "
     "outbox row, one publish, one delivery per consumer, one business "
     "change each, then the offset commit.",
     1, 1},
    {"api-after-commit-before-reply", "API: after the commit, before the reply",
     crash_point::api_after_commit_before_reply, false,
     "The API worker crashes after the order and its outbox row are "
     "committed but before the client hears about it. The client retries "
     "with the same Idempotency-Key and gets the same order back: nothing "
     "is written twice, and the event is published once.",
     1, 1},
    {"relay-after-publish-before-ack",
     "Relay: after the publish, before the ack",
     crash_point::relay_after_publish_before_ack, false,
     "The relay crashes after handing the record to the producer but before "
     "the broker's ack comes back. The row is still unsent, so the restarted "
     "relay publishes it again; whether the first copy reached the broker "
     "decides if consumers see one delivery or two.",
     1, 1},
    {"relay-after-ack-before-mark", "Relay: after the ack, before the mark",
     crash_point::relay_after_ack_before_mark, false,
     "The broker has acknowledged the record, but the relay crashes before "
     "marking the row sent (the publish and the mark are not atomic). The "
     "restarted relay publishes it again: two copies on the topic, and each "
     "consumer's second delivery is suppressed by processed_events.",
     2, 1},
    {"consumer-before-db-commit", "Consumer: before the DB commit",
     crash_point::consumer_before_db_commit, false,
     "The partition worker crashes inside its transaction, after the "
     "business change but before COMMIT. PostgreSQL rolls back the mark and "
     "the change; the offset was never committed, so the record is "
     "delivered again and applied then, once.",
     2, 1},
    {"consumer-after-db-before-offset",
     "Consumer: after the DB commit, before the offset commit",
     crash_point::consumer_after_db_before_offset, false,
     "The business change and the processed_events mark are committed, but "
     "the worker crashes before the Kafka offset is. The record is delivered "
     "again; the mark's UNIQUE key suppresses the second business change.",
     2, 1},
    {"poison-event", "Poison event: retries, DLQ, replay", std::nullopt, true,
     "The first consumer fails on this event every time. It retries inline "
     "(the partition waits, order is kept), parks the event in the DLQ after "
     "the last attempt, acknowledged before the offset moves on; an operator "
     "replay (done here for you) publishes it again with the same event ID "
     "and it is applied once.",
     2, 1},
    {"dlq-after-ack-before-offset",
     "DLQ: after the DLQ ack, before the offset commit",
     crash_point::dlq_after_dlq_ack_before_offset, true,
     "A poison event is acknowledged by the DLQ topic, then the worker "
     "crashes before recording the entry and committing the offset. The "
     "record comes again, fails again and is parked once (one DLQ entry per "
     "consumer and event); the replay applies it once.",
     3, 1},
    {"dlq-replay-after-mark-before-publish",
     "DLQ replay: after recording the replay, before publishing it",
     crash_point::dlq_replay_after_mark_before_publish, true,
     "A poison event is parked; its replay records its intent (the entry "
     "says replaying) and the DLQ handler crashes before publishing the "
     "record. Nothing is on the topic yet, but nothing is lost: once the "
     "replay's delivery timeout has passed, the restarted handler finds the "
     "entry still replaying, publishes it and marks it replayed. It is "
     "applied once.",
     2, 1},
    {"dlq-replay-after-publish-before-mark",
     "DLQ replay: after the publish, before marking it replayed",
     crash_point::dlq_replay_after_publish_before_mark, true,
     "A poison event is parked and replayed; the broker acknowledges the "
     "replayed record, then the DLQ handler crashes before marking the "
     "entry replayed. The consumer applies the record (its entry says "
     "replaying); the handler later publishes it again, and that copy is "
     "suppressed by processed_events. Three deliveries, one business "
     "change.",
     3, 1},
    {"kafka-leader-moves-before-ack",
     "Kafka: the partition leader moves between publish and ack", std::nullopt,
     false,
     "The relay has sent the order's record and waits for the broker's "
     "acknowledgement when every partition's leader moves to another broker, "
     "as when a broker of a real cluster is restarted. The producer is told "
     "the old leader is no longer one, finds the new leader and sends again "
     "with the same producer sequence: the broker appends the record once, "
     "and the relay marks the row only after the acknowledgement comes. One "
     "delivery, one business change.",
     1, 1, kafka_fault::leader_move},
    {"kafka-broker-down-5s", "Kafka: the broker is down for 5 s", std::nullopt,
     false,
     "Every broker refuses connections for five seconds, from just before "
     "the order. The API commits the order and its outbox row as usual; the "
     "relay cannot publish, so the row waits in the outbox (unsent) while "
     "the producer retries within kafka.delivery-timeout-ms. When the "
     "brokers are back the record is acknowledged, the row is marked and "
     "the consumers apply it: the outbox grew and drained, nothing was lost "
     "and nothing applied twice.",
     1, 1, kafka_fault::broker_down},
  };
  return all;
}

std::string unavailable(const scenario& s, const broker_controls& broker) {
  if (s.kafka == kafka_fault::none)
    return {};
  if (!broker.run)
    return "needs the in-process broker (serve without kafka.brokers)";
  if (s.kafka == kafka_fault::leader_move && broker.brokers < 2)
    return "needs kafka.embedded-brokers >= 2: a leader has nowhere to move";
  return {};
}

const scenario* find_scenario(const std::string& name) {
  for (auto& s : scenarios())
    if (s.name == name)
      return &s;
  return nullptr;
}

scenario_runner::scenario_runner(caf::actor_system& sys, eventforge_actor root,
                                 const config::settings& cfg, std::string dsn,
                                 std::string brokers,
                                 std::shared_ptr<chaos> faults,
                                 broker_controls broker)
    : sys_(sys), root_(std::move(root)), cfg_(cfg), dsn_(dsn),
      cluster_(kafka::cluster_of(cfg, std::move(brokers))),
      faults_(std::move(faults)), broker_(std::move(broker)),
      journal_(std::move(dsn)) {
  // nop
}

scenario_runner::~scenario_runner() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (brokers_back_.joinable())
    brokers_back_.join();
}

std::string scenario_runner::busy_with() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!current_)
    return {};
  auto age = std::chrono::steady_clock::now() - current_->started;
  bool pending = current_->placing || current_->following ||
                 faults_->armed_for(current_->trace_id);
  if (pending && age < max_run) {
    auto s = std::chrono::duration_cast<std::chrono::seconds>(age).count();
    return "scenario \"" + current_->name + "\" is still running (started " +
           std::to_string(s) + " s ago); one runs at a time";
  }
  // Over, or given up on: nothing of it stays armed.
  faults_->disarm(current_->trace_id);
  current_.reset();
  return {};
}

std::variant<scenario_run, std::string, scenario_refused>
scenario_runner::start(const scenario& s) {
  if (!faults_)
    return std::string("this process has no crash points to arm");
  if (auto busy = busy_with(); !busy.empty())
    return scenario_refused{busy};
  scenario_run run;
  run.trace_id = random_hex(32);
  auto state = std::make_shared<run_state>();
  state->name = s.name;
  state->trace_id = run.trace_id;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (current_) // another request took the slot meanwhile
      return scenario_refused{"another scenario just started; one runs at a "
                              "time"};
    current_ = state;
  }
  // Whatever happens below, this run's faults never outlive it: an order
  // that is not placed disarms them at once, a placed one when it is over
  // (busy_with), at the latest after max_run.
  struct disarm_unless_placed {
    scenario_runner* self;
    std::shared_ptr<run_state> state;
    bool placed = false;
    ~disarm_unless_placed() {
      if (placed) {
        state->placing = false;
        return;
      }
      self->faults_->disarm(state->trace_id);
      std::lock_guard<std::mutex> guard{self->mtx_};
      if (self->current_ == state)
        self->current_.reset();
    }
  } guard{this, state};
  auto focus = cfg_.consumer.enabled.empty() ? std::string{}
                                             : cfg_.consumer.enabled.front();
  if (s.point && !faults_->arm(*s.point, run.trace_id,
                               consumer_side(*s.point) ? focus : std::string{}))
    return std::string("too many crashes armed already");
  if (s.poison && !faults_->poison(run.trace_id, focus))
    return std::string("too many events poisoned already");
  if (auto why = unavailable(s, broker_); !why.empty())
    return why;
  if (s.kafka == kafka_fault::leader_move) {
    // Moved by the relay's own thread, in the window itself.
    auto moves = std::make_shared<std::vector<std::string>>();
    for (int p = 0; p < cfg_.kafka.partitions; ++p)
      moves->push_back("leader " + cfg_.kafka.topic + " " + std::to_string(p));
    auto run_fault = broker_.run;
    if (!faults_->arm_action(crash_point::relay_after_publish_before_ack,
                             run.trace_id, [moves, run_fault] {
                               // Each partition to the next broker that is up
                               // after its leader.
                               for (auto& move : *moves)
                                 ef::log::warn("scenario: {}",
                                               run_fault(move + " next"));
                             }))
      return std::string("too many crashes armed already");
  }
  if (s.kafka == kafka_fault::broker_down) {
    for (int b = 1; b <= broker_.brokers; ++b)
      if (!fault("down " + std::to_string(b)))
        return std::string("the broker refused the fault");
    state->following = true;
    bring_brokers_back(std::chrono::seconds(5), state);
  }

  create_order cmd;
  cmd.customer_id = "demo-" + s.name;
  cmd.items = {{"demo-widget", 1, 1500}};
  cmd.idempotency_key = "demo-" + run.trace_id;
  cmd.request_fingerprint = "demo:" + s.name;
  cmd.traceparent = "00-" + run.trace_id + "-" + random_hex(16) + "-01";
  // A client whose reply was lost sends the same request again, with the
  // same key: the API must answer with the order it already committed.
  auto timeout = std::chrono::milliseconds(cfg_.http.request_timeout_ms);
  std::vector<persistence::journal_line> retries;
  std::string last_error;
  {
    caf::scoped_actor self{sys_};
    for (int attempt = 0; attempt < 10 && run.order_id.empty() && !cancelled_;
         ++attempt) {
      if (attempt > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
        persistence::journal_line line;
        line.what = persistence::journal_line::kind::client_retry;
        line.actor = "demo client";
        line.detail = "no reply (" + last_error +
                      "); the client sent the same request again with "
                      "Idempotency-Key " +
                      cmd.idempotency_key;
        retries.push_back(std::move(line));
      }
      cmd.deadline_unix_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(
          (std::chrono::system_clock::now() + timeout).time_since_epoch())
          .count();
      // Two seconds past its deadline: the worker's own answer (written or
      // not) arrives first; only silence is an unknown outcome, and the
      // keyed retry settles that.
      self->request(root_, timeout + std::chrono::seconds(2), cmd)
        .receive([&](order_accepted& a) { run.order_id = a.order_id; },
                 [&](caf::error& err) { last_error = sys_.render(err); });
    }
  }
  if (run.order_id.empty() && cancelled_)
    return "the server is stopping; if the order was written, "
           "Idempotency-Key " +
           cmd.idempotency_key + " returns it";
  if (run.order_id.empty())
    return "the order was not confirmed after 10 attempts (last: " +
           last_error + "); if one was written, Idempotency-Key " +
           cmd.idempotency_key + " returns it";
  guard.placed = true;
  // Only now is the order ID known that ties the retries to the order.
  for (auto& line : retries) {
    line.order_id = run.order_id;
    journal_.record(std::move(line));
  }
  journal_.flush(std::chrono::seconds(2));
  if (s.poison)
    replay_when_parked(run.order_id, focus, state);
  return run;
}

bool scenario_runner::fault(const std::string& command) {
  auto answer = broker_.run(command);
  ef::log::warn("scenario: {}: {}", command, answer);
  return answer.rfind("fault ok", 0) == 0;
}

void scenario_runner::bring_brokers_back(std::chrono::milliseconds down_for,
                                         std::shared_ptr<run_state> state) {
  // A thread of its own: the run's request is answered at once, and the
  // brokers come back whatever happens to it (at once if the runner goes).
  // One run at a time: the previous one's thread has finished.
  if (brokers_back_.joinable())
    brokers_back_.join();
  brokers_back_ = std::thread([this, down_for, state] {
    {
      std::unique_lock<std::mutex> lock{mtx_};
      stop_cv_.wait_for(lock, down_for, [this] { return stopping_; });
    }
    for (int b = 1; b <= broker_.brokers; ++b)
      fault("up " + std::to_string(b));
    state->following = false;
  });
}

void scenario_runner::replay_when_parked(const std::string& order_id,
                                         const std::string& consumer,
                                         std::shared_ptr<run_state> state) {
  state->following = true;
  // A detached actor: it waits on the database, never on a scheduler
  // thread, and stops with the tree (it monitors the root).
  auto store = std::make_shared<persistence::dlq_store>(dsn_);
  auto moved_past = [cluster = cluster_, topic = cfg_.kafka.topic,
                     partitions = cfg_.kafka.partitions,
                     group = "eventforge." +
                             consumer](const persistence::dlq_entry& e) {
    auto committed =
      kafka::committed_offsets(cluster, group, topic, partitions, 2000);
    return e.source_partition >= 0 &&
           e.source_partition < static_cast<int>(committed.size()) &&
           committed[e.source_partition] > e.source_offset;
  };
  // The root is a spawn argument, never an empty argument list (see
  // http_frontend's ask()).
  // Ends the follow-up: the run's poison (and anything else still armed
  // for it) goes, and the runner may start the next scenario.
  auto finish = [faults = faults_, state] {
    faults->disarm(state->trace_id);
    state->following = false;
  };
  sys_.spawn<caf::detached>(
    [store, order_id, consumer, moved_past,
     finish](caf::event_based_actor* self, eventforge_actor root) {
      self->monitor(root);
      self->set_down_handler([self, finish](caf::down_msg&) {
        finish();
        self->quit();
      });
      auto polls = std::make_shared<int>(0);
      auto replayed = std::make_shared<bool>(false);
      auto replayed_id = std::make_shared<std::int64_t>(0);
      self->send(self, poll_atom::value);
      return caf::behavior{
        [=](poll_atom) {
          std::optional<persistence::dlq_entry> entry;
          try {
            // Before the replay: the parked head of the order; after it,
            // the same entry until it says replayed.
            entry = *replayed ? store->get(*replayed_id)
                              : store->head_of(consumer, order_id);
          } catch (const std::exception& e) {
            ef::log::debug("demo: DLQ or offsets not readable yet: {}",
                           e.what());
          }
          if (!*replayed && entry && entry->status == dlq_status::parked) {
            bool past = false;
            try {
              past = moved_past(*entry);
            } catch (const std::exception& e) {
              ef::log::debug("demo: offsets not readable yet: {}", e.what());
            }
            if (past) {
              ef::log::info("demo: replaying DLQ entry {} of order {}",
                            entry->id, order_id);
              self->send(root,
                         dlq_command{dlq_verb::replay, entry->id, "", "demo"});
              *replayed = true;
              *replayed_id = entry->id;
            }
          } else if (*replayed && entry &&
                     entry->status == dlq_status::replayed) {
            finish();
            self->quit();
            return;
          }
          if (++*polls >= dlq_polls) {
            ef::log::warn("demo: order {} was not {} in time", order_id,
                          *replayed ? "replayed" : "parked");
            finish();
            self->quit();
            return;
          }
          self->delayed_send(self, dlq_poll, poll_atom::value);
        },
      };
    },
    root_);
}

} // namespace ef::app
