#pragma once

#include "actors/context.hpp"
#include "persistence/retention_store.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace ef {

/// What a janitor is built from. Production: the database's retention
/// deletions (production_janitor_deps); deterministic actor tests give a
/// fake.
struct janitor_deps {
  std::function<std::unique_ptr<persistence::retention_store>()> store;
};

janitor_deps production_janitor_deps(const context_ptr& ctx);

/// Retention: deletes SENT outbox rows older than outbox.retention (and,
/// only if configured, old processed_events marks) in small batches, each
/// its own short transaction, pausing between rounds. Unsent rows are never
/// touched. Blocking (libpq), so detached; supervised under "maintenance".
struct janitor_state {
  context_ptr ctx;
  std::unique_ptr<persistence::retention_store> store;
  /// One batch; returns true if a full batch went (more may be waiting).
  bool sweep();
  /// One round: a sweep, then a short breather between full batches (lets
  /// other writers in) or a long one once the backlog is gone.
  std::chrono::milliseconds round();
  static inline const char* name = "janitor";
};

/// The production janitor.
caf::behavior janitor(caf::stateful_actor<janitor_state>* self,
                      context_ptr ctx);

/// The same actor, built from `deps`.
caf::behavior janitor_with(caf::stateful_actor<janitor_state>* self,
                           context_ptr ctx, janitor_deps deps);

} // namespace ef
