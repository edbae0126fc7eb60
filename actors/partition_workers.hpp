#pragma once

#include "actors/context.hpp"
#include "actors/restart_rules.hpp"
#include "config/backoff.hpp"
#include "messages/tree_messages.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace ef {

/// The partition actors of one group member, supervised by the same rules
/// as every other child of the tree (restart_rules: counted, escalated past
/// the intensity unless a database outage, restarted after their backoff).
/// Each is linked to the member; the member routes their exits here.
class partition_workers {
public:
  using spawner =
    std::function<caf::actor(caf::event_based_actor*, std::int32_t)>;

  partition_workers(caf::event_based_actor* member, context_ptr ctx,
                    std::string consumer, spawner spawn);

  /// Starts the actor of `p` (a new partition, or a restart).
  void start(std::int32_t p);
  /// Stops the actor of `p` at once and starts a new one.
  void replace(std::int32_t p);
  /// Stops the actor of `p` and forgets the partition (revoked).
  void remove(std::int32_t p);

  /// The live actor of `p`; invalid if none or waiting for its restart.
  caf::actor actor_of(std::int32_t p) const;
  /// True if `p` is owned and its actor waits for its restart.
  bool waiting(std::int32_t p) const;

  /// A crash of one of ours: the partition and how long to wait before
  /// restart() it; nullopt if `em` is not from one of ours. Throws
  /// (escalation) past the restart intensity.
  std::optional<std::pair<std::int32_t, std::chrono::milliseconds>>
  crashed(const caf::exit_msg& em);

  /// Sends every live actor an exit message and monitors it (a child that
  /// receives one unlinks from its sender: its end comes as a down message).
  void stop_all(const caf::error& reason);
  /// While stopping: forgets the actor that ended; true once none is left.
  bool ended(const caf::actor_addr& source);

  /// The live actors by name ("partition-<p>"), for children_atom.
  std::map<std::string, caf::actor> live() const;

private:
  struct worker {
    caf::actor actor; ///< invalid while waiting for its restart
    config::backoff restarts;
  };
  void halt(worker& w);

  caf::event_based_actor* member_;
  context_ptr ctx_;
  std::string consumer_;
  spawner spawn_;
  restart_rules rules_;
  std::map<std::int32_t, worker> workers_;
};

} // namespace ef
