#include "app/page/scenarios.hpp"

#include "app/page/scenario_arms_sync.hpp"
#include "kafka/offsets.hpp"
#include "messages/tree_messages.hpp"
#include "persistence/dlq_store.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/config/options.hpp>
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

} // namespace

scenario_runner::scenario_runner(caf::actor_system& sys, eventforge_actor root,
                                 const config::settings& cfg, std::string dsn,
                                 std::string brokers,
                                 std::shared_ptr<chaos> faults,
                                 broker_controls broker)
    : sys_(sys), root_(std::move(root)), cfg_(cfg), dsn_(dsn),
      cluster_(kafka::cluster_of(cfg, std::move(brokers))),
      faults_(std::move(faults)), broker_(std::move(broker)),
      journal_(std::make_shared<persistence::recovery_journal>(dsn)) {
  if (!faults_)
    return;
  // A node takes the scenarios other nodes arm when it may run them
  // itself: demo mode, or an admin token to run them with.
  bool takes = cfg.demo.enabled || !cfg.http.admin_token.empty();
  auto node =
    cfg.node.name.empty() ? config::default_node_name(cfg) : cfg.node.name;
  arms_ = std::make_shared<scenario_arms_sync>(
    std::move(dsn), std::move(node), faults_, takes, std::chrono::seconds(1));
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

const std::string& scenario_runner::node() const {
  return arms_->node();
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
  // Over, or given up on: nothing of it stays armed, on any node.
  arms_->disarm(current_->trace_id);
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
  state->notes = std::make_shared<fault_notes>();
  state->notes->journal = journal_;
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
      self->arms_->disarm(state->trace_id);
      std::lock_guard<std::mutex> guard{self->mtx_};
      if (self->current_ == state)
        self->current_.reset();
    }
  } guard{this, state};
  auto focus = cfg_.consumer.enabled.empty() ? std::string{}
                                             : cfg_.consumer.enabled.front();
  auto armed = arm_everywhere(s, run.trace_id, focus);
  if (armed.refused)
    return scenario_refused{armed.why};
  if (!armed.why.empty())
    return armed.why;
  run.armed_on = armed.nodes;
  if (auto why = arm(s, run.trace_id, state); !why.empty())
    return why;
  std::vector<persistence::journal_line> retries;
  if (auto why = place_order(s, run, retries); !why.empty())
    return why;
  guard.placed = true;
  // Only now is the order ID known that ties the retries and the Kafka
  // faults to the order.
  for (auto& line : retries) {
    line.order_id = run.order_id;
    journal_->record(std::move(line));
  }
  state->notes->placed(run.order_id);
  if (s.point || s.poison) {
    try {
      arms_->store().placed(run.trace_id, run.order_id);
    } catch (const std::exception& e) {
      ef::log::warn("scenario: order {} not noted with its arm: {}",
                    run.order_id, e.what());
    }
  }
  journal_->flush(std::chrono::seconds(2));
  if (s.poison)
    replay_when_parked(run.order_id, focus, state);
  return run;
}

std::string
scenario_runner::place_order(const scenario& s, scenario_run& run,
                             std::vector<persistence::journal_line>& retries) {
  create_order cmd;
  cmd.customer_id = "demo-" + s.name;
  cmd.items = {{"demo-widget", 1, 1500}};
  cmd.idempotency_key = "demo-" + run.trace_id;
  cmd.request_fingerprint = "demo:" + s.name;
  cmd.traceparent = "00-" + run.trace_id + "-" + random_hex(16) + "-01";
  // A client whose reply was lost sends the same request again, with the
  // same key: the API must answer with the order it already committed.
  auto timeout = std::chrono::milliseconds(cfg_.http.request_timeout_ms);
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
  return {};
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
      fault("up " + std::to_string(b), *state->notes);
    state->following = false;
  });
}

} // namespace ef::app
