#pragma once

// The atoms a host sends the root (eventforge_actor). The tree's own atoms
// are internal (messages/tree_messages.hpp).

#include <caf/atom.hpp>

namespace ef {

/// Asks the tree for every telemetry series and its value (counter_map).
using stats_atom = caf::atom_constant<caf::atom("stats")>;
/// Graceful stop, asked of the root and passed down the tree: take no new
/// work, finish and commit what is held, then answer true. Relays finish
/// their batch; group members apply and commit what they fetched.
using drain_atom = caf::atom_constant<caf::atom("drain")>;

} // namespace ef
