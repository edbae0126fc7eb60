#pragma once

#include "actors/restart_policy.hpp"
#include "config/settings.hpp"

#include <caf/all.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ef {

/// How a supervisor starts one child. `spawn` must spawn it LINKED to the
/// given supervisor, so the child dies with the tree.
struct child_spec {
  std::string kind; ///< "api", "relay", "consumer": restart counters key
  std::string name; ///< unique, e.g. "relay-2"
  std::function<caf::actor(caf::event_based_actor*)> spawn;
};

/// The root supervisor (one_for_one): starts every child, restarts a crashed
/// one after a backoff, and escalates (fails itself) when restarts exceed the
/// intensity. It is also the tree's front door: order commands sent to it are
/// delegated round-robin to the live API workers.
struct supervisor_state {
  struct child {
    child_spec spec;
    caf::actor current; ///< invalid while waiting for a restart
    int consecutive_crashes = 0;
    std::chrono::steady_clock::time_point started{};
  };
  caf::event_based_actor* self = nullptr;
  std::vector<child> children;
  std::optional<restart_policy> restarts;
  std::chrono::milliseconds backoff{50};
  std::map<std::string, std::uint64_t> restart_counts; ///< by kind
  size_t next_api = 0;

  void start(size_t index);
  /// Handles a linked actor's exit; false if it is not one of ours.
  bool on_child_exit(const caf::exit_msg& em);
  /// The next live API worker, or an invalid handle.
  caf::actor next_api_worker();

  static inline const char* name = "supervisor";
};

caf::behavior supervisor(caf::stateful_actor<supervisor_state>* self,
                         std::vector<child_spec> children,
                         config::settings cfg);

} // namespace ef
