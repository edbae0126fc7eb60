#pragma once

#include <caf/atom.hpp>

namespace ef {

/// Self-sent by polling actors (relay, group member) to run one round.
using poll_atom = caf::atom_constant<caf::atom("poll")>;
/// Self-sent by a supervisor to start a crashed child again after backoff.
using restart_atom = caf::atom_constant<caf::atom("restart")>;
/// Asks a supervisor for its restart counters.
using stats_atom = caf::atom_constant<caf::atom("stats")>;
/// Asks a supervisor for its live children: map<string name, actor>.
using children_atom = caf::atom_constant<caf::atom("children")>;
/// Asks a partition actor to retry the record it is holding.
using retry_atom = caf::atom_constant<caf::atom("retry")>;
/// Self-sent by an API actor or a partition actor to apply what it has
/// gathered: it queues behind the messages already waiting, so everything
/// that arrived meanwhile shares one transaction.
using flush_atom = caf::atom_constant<caf::atom("flush")>;
/// Graceful stop, asked of the root and passed down the tree: take no new
/// work, finish and commit what is held, then answer true. Relays finish
/// their batch; group members apply and commit what they fetched.
using drain_atom = caf::atom_constant<caf::atom("drain")>;

} // namespace ef
