#pragma once

#include "actors/chaos.hpp"
#include "kafka/connection.hpp"
#include "persistence/recovery_journal.hpp"
#include <eventforge/config/settings.hpp>
#include <eventforge/messages/interfaces.hpp>

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace ef::app {

class scenario_arms_sync;

/// A fault of the Kafka cluster a scenario causes (the in-process one).
enum class kafka_fault {
  none,
  /// Every partition's leader moves to the next broker while the relay
  /// waits for the broker's acknowledgement of the order's record.
  leader_move,
  /// Every broker is down for five seconds from just before the order.
  broker_down,
};

/// The in-process cluster's fault commands (kafka::parse_fault's words,
/// answered "fault ok: ..." or "fault error: ...") and how many brokers it
/// has; empty when the broker is not this process's own.
struct broker_controls {
  std::function<std::string(const std::string& command)> run;
  int brokers = 0;
};

/// One failure the recovery page can show on the real system: a crash armed
/// for one order at one window, a poison event, a Kafka fault, or nothing.
struct scenario {
  std::string name;  ///< "consumer-after-db-before-offset"
  std::string title; ///< one line
  std::optional<crash_point> point;
  bool poison = false; ///< the first consumer fails the event until parked
  std::string explain; ///< what fails and what recovery must do
  /// What the focus consumer must end with for the order's one event.
  int deliveries = 1;
  int business_changes = 1;
  kafka_fault kafka = kafka_fault::none;
};

/// Why `s` cannot run on this process ("" if it can): a Kafka fault needs
/// the in-process broker, a leader move two brokers or more.
std::string unavailable(const scenario& s, const broker_controls& broker);

/// Every scenario, in the page's order.
const std::vector<scenario>& scenarios();

/// The scenario named `name`, or nullptr.
const scenario* find_scenario(const std::string& name);

/// Where a started run can be followed.
struct scenario_run {
  std::string order_id;
  std::string trace_id;
  /// The nodes that armed its crash or poison (through the database).
  std::vector<std::string> armed_on;
};

/// Why a scenario may not start now: another one is still running, or a
/// node that may own the order's relay shard or partition cannot fire it.
struct scenario_refused {
  std::string why;
};

/// Runs scenarios against a running tree: arms the fault for a fresh trace,
/// places a real order through the root actor as a client would (retrying
/// with the same Idempotency-Key when the reply is lost), and, for a poison
/// event, replays its DLQ entry once it is parked, as an operator would.
/// Blocking: call it off the HTTP I/O threads.
class scenario_runner {
public:
  scenario_runner(caf::actor_system& sys, eventforge_actor root,
                  const config::settings& cfg, std::string dsn,
                  std::string brokers, std::shared_ptr<chaos> faults,
                  broker_controls broker = {});
  ~scenario_runner();

  /// The order's IDs once it is accepted, why it could not be placed
  /// (a string), or why no scenario may start now (scenario_refused: one
  /// runs at a time).
  std::variant<scenario_run, std::string, scenario_refused>
  start(const scenario& s);

  /// Makes a start() in progress give up after its current request (and
  /// every later one at once): the front stops, and whatever runs on its
  /// pool must end before the front's parts go.
  void cancel() { cancelled_ = true; }

  /// The longest a run counts as running: past it, whatever it armed is
  /// removed and the next one may start.
  static constexpr std::chrono::seconds max_run{150};

  /// How long the nodes sharing the database have to arm a scenario
  /// before it is refused (they read the arms every second).
  static constexpr std::chrono::seconds arm_wait{3};

  /// This node's name (node.name), as its sessions carry it.
  const std::string& node() const;

private:
  /// The Kafka faults a run applied, for the journal: kept until the order
  /// is placed, then recorded with its order ID.
  struct fault_notes {
    std::shared_ptr<persistence::recovery_journal> journal;
    std::mutex mtx;
    std::string order_id;                           ///< guarded by mtx
    std::vector<persistence::journal_line> pending; ///< guarded by mtx
    void note(const std::string& answer);
    void placed(const std::string& id);
  };

  /// The run in progress: the faults it armed stay until it is over.
  struct run_state {
    std::string name;
    std::string trace_id;
    std::chrono::steady_clock::time_point started =
      std::chrono::steady_clock::now();
    std::atomic<bool> placing{true};    ///< its order is not placed yet
    std::atomic<bool> following{false}; ///< its DLQ follow-up is running
    std::shared_ptr<fault_notes> notes;
  };

  /// Why the current run still runs ("" if none does; a finished or
  /// expired one is disarmed and forgotten here).
  std::string busy_with();

  /// Why a run was not armed: an error (why) or a refusal.
  struct arming {
    std::string why; ///< "" if armed
    bool refused = false;
    std::vector<std::string> nodes; ///< where it is armed
  };

  /// Arms the scenario's crash point and poison through the database, here
  /// at once, and waits (up to arm_wait) until every node connected to the
  /// database armed it too (scenario_arming.cpp): refused, naming them, if
  /// one does not.
  arming arm_everywhere(const scenario& s, const std::string& trace_id,
                        const std::string& focus);

  /// Why this node cannot move the leaders in the window of the relay that
  /// publishes the order ("" if it can): a relay shard another node owns.
  std::string leader_move_refusal();

  /// Arms the scenario's Kafka fault for the run's trace (a broker-down
  /// run takes the brokers down now); "" if armed, else why not.
  std::string arm(const scenario& s, const std::string& trace_id,
                  const std::shared_ptr<run_state>& state);

  /// Places the run's order as a client would, sending the same keyed
  /// request again while no answer comes (each retry kept in `retries` for
  /// the journal); "" once run.order_id is set, else why it is not.
  std::string place_order(const scenario& s, scenario_run& run,
                          std::vector<persistence::journal_line>& retries);

  /// Runs `command` on the cluster; false (and logged) if it was refused.
  /// What the broker answered goes to `notes`.
  bool fault(const std::string& command, fault_notes& notes);

  /// Brings every broker back after `down_for`, in the background, then
  /// ends the run.
  void bring_brokers_back(std::chrono::milliseconds down_for,
                          std::shared_ptr<run_state> state);

  /// Replays the order's DLQ entry for `consumer` in the background, once it
  /// is parked and the consumer's offset has moved past the parked record
  /// (before that, a crash may still deliver the original again, which
  /// would park it once more over the replay), then waits until the entry
  /// says replayed and disarms the run (scenario_follow_up.cpp).
  void replay_when_parked(const std::string& order_id,
                          const std::string& consumer,
                          std::shared_ptr<run_state> state);

  caf::actor_system& sys_;
  eventforge_actor root_;
  config::settings cfg_;
  std::string dsn_;
  kafka::connection cluster_;
  std::shared_ptr<chaos> faults_;
  broker_controls broker_;
  std::shared_ptr<persistence::recovery_journal> journal_;
  std::shared_ptr<scenario_arms_sync> arms_;
  std::atomic<bool> cancelled_{false};
  std::mutex mtx_;
  std::shared_ptr<run_state> current_; ///< guarded by mtx_
  /// Brings the brokers back after a broker-down run; joined (and woken
  /// early, bringing them back at once) when the runner goes.
  std::thread brokers_back_;
  std::condition_variable stop_cv_;
  bool stopping_ = false; ///< guarded by mtx_
};

} // namespace ef::app
