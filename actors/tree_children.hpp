#pragma once

#include "actors/context.hpp"
#include "actors/supervisor.hpp"

#include <vector>

namespace ef {

/// The root's children, which describe the hierarchy: `api` (the API
/// workers, route "orders"), `relays` (one per shard), `dlq` (the DLQ
/// handler, route "dlq"), `maintenance` (janitor, repairer, gauge and lag
/// samplers) and one `consumer-<name>` per enabled consumer (its group
/// member). Blocking actors are detached; every actor is linked to its
/// supervisor, so the tree lives and dies as one.
std::vector<child_spec> tree_children(const context_ptr& ctx);

} // namespace ef
