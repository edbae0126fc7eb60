#pragma once

#include "actors/context.hpp"
#include "actors/restart_rules.hpp"
#include "config/backoff.hpp"
#include "messages/tree_messages.hpp"
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/control_messages.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ef {

/// How a supervisor starts one child. `spawn` must spawn it LINKED to the
/// given supervisor, so the child dies with the tree.
struct child_spec {
  std::string kind; ///< restart counter label: "api", "relay", "supervisor"…
  std::string name; ///< unique among siblings, e.g. "relay-2"
  std::function<caf::actor(caf::local_actor* supervisor)> spawn;
  std::string route; ///< "orders", "dlq": commands routed to it; "": none
};

/// A one_for_one supervisor: starts every child, restarts a crashed one
/// after an exponential backoff, and escalates (fails itself, which its own
/// supervisor then sees as a crash) when restarts exceed the intensity.
/// Asked to stop (an exit message from its owner), it stops its children
/// and terminates after the last of them.
/// Order commands it receives are delegated round-robin to the live children
/// that serve orders, so the root is the tree's front door.
struct supervisor_state {
  struct child {
    child_spec spec;
    caf::actor current; ///< invalid while waiting for a restart
    /// supervisor.restart-* (config/backoff.hpp): doubles per crash in a
    /// row, afresh after a healthy spell.
    config::backoff restarts;
    /// Why it last crashed, for the journal line of its restart.
    caf::error last_crash;
  };
  supervisor_actor::pointer self = nullptr;
  context_ptr ctx;
  std::string label; ///< for logs, e.g. "relays"
  std::vector<child> children;
  /// Counting, escalation and backoff of crashes (shared by all children).
  std::optional<restart_rules> rules;
  size_t next_router = 0;
  /// Set once whoever owns us asked us to stop: children are stopped, none
  /// is restarted, and we quit with this reason when the last one is gone.
  std::optional<caf::error> stopping;

  void start(size_t index);
  /// Publishes how many children are waiting for a restart.
  void report_down();
  /// Handles a linked actor's exit; false if it is not one of ours.
  bool on_child_exit(const caf::exit_msg& em);
  /// Stops every live child and quits once all are gone, so that our down
  /// message means the whole subtree has terminated.
  void stop(caf::error reason);
  /// While stopping: forgets the child that terminated.
  void on_stopped_child(const caf::actor_addr& source);
  /// Quits if stopping and no child is left.
  void quit_when_empty();
  /// Passes a drain to every live child; the report names each descendant
  /// that answered it did not drain, failed, or did not answer in time.
  caf::result<drain_report> drain();
  /// The next live child on `route`, or an invalid handle.
  caf::actor next_on(const std::string& route);
  /// Hands `cmd` to the next live child on `route` (whose face is `Face`);
  /// it answers the original requester itself.
  template <class Face, class Reply, class Command>
  caf::result<Reply> pass_on(const char* route, Command& cmd) {
    auto next = next_on(route);
    if (!next)
      return make_api_error(api_errc::unavailable,
                            std::string("no actor is up for ") + route);
    return self->delegate(caf::actor_cast<Face>(next), std::move(cmd));
  }

  static inline const char* name = "supervisor";
};

supervisor_actor::behavior_type
supervisor(supervisor_actor::stateful_pointer<supervisor_state> self,
           std::string name, std::vector<child_spec> children, context_ptr ctx);

} // namespace ef
