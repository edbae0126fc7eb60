#pragma once

#include "actors/chaos.hpp"
#include "persistence/scenario_arms.hpp"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace ef::app {

/// Keeps this node's crash points in step with the scenarios armed through
/// the database (table scenario_arms) by any node that shares it, so that
/// the node owning an order's relay shard or partition fires the crash that
/// another node's page armed. Reads the live arms every `every` (a LISTEN
/// session would be woken by every order's NOTIFY: PostgreSQL 15 signals
/// every listening backend of the database, whatever the channel), arms the
/// new ones here (a crash claimed through the database when it fires, so it
/// fires on one node), drops a crash another node fired, disarms what is
/// over, and adds this node to each arm's seen_by: the node that armed it
/// waits for that before it places the order.
class scenario_arms_sync {
public:
  /// Polls only if `poll` (this node takes scenarios); arm_here() and
  /// disarm() work either way.
  scenario_arms_sync(std::string dsn, std::string node,
                     std::shared_ptr<chaos> faults, bool poll,
                     std::chrono::milliseconds every);
  ~scenario_arms_sync();
  scenario_arms_sync(const scenario_arms_sync&) = delete;
  scenario_arms_sync& operator=(const scenario_arms_sync&) = delete;

  /// Arms `arm`'s crash (claimed) and poison in this node's crash points;
  /// false if they are full (chaos::max_armed).
  bool arm_here(const persistence::scenario_arm& arm);

  /// Ends the arm everywhere: here at once, in the database (the other
  /// nodes at their next read). Logs, never throws.
  void disarm(const std::string& trace_id);

  const std::string& node() const { return node_; }

  /// This node's own store (the runner's inserts and reads).
  persistence::scenario_arm_store& store() { return store_; }

private:
  void run(std::chrono::milliseconds every);
  void round();

  std::string dsn_;
  std::string node_;
  std::shared_ptr<chaos> faults_;
  persistence::scenario_arm_store store_;
  /// The claims' own store: a claim runs on an actor's thread, in its crash
  /// window, and must not wait behind a read of the poller.
  std::shared_ptr<persistence::scenario_arm_store> claims_;
  std::mutex mtx_;
  std::set<std::string> known_; ///< traces armed here; guarded by mtx_
  std::condition_variable stop_cv_;
  bool stopping_ = false; ///< guarded by mtx_
  std::thread poller_;
};

} // namespace ef::app
