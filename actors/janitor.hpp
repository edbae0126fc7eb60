#pragma once

#include "actors/context.hpp"

#include <caf/all.hpp>

#include <chrono>

namespace ef {

/// Retention: deletes SENT outbox rows older than outbox.retention (and,
/// only if configured, old processed_events marks) in small batches, each
/// its own short transaction, pausing between rounds. Unsent rows are never
/// touched. Blocking (libpq), so detached; supervised under "maintenance".
struct janitor_state {
  context_ptr ctx;
  /// One batch; returns true if a full batch went (more may be waiting).
  bool sweep();
  /// One round: a sweep, then a short breather between full batches (lets
  /// other writers in) or a long one once the backlog is gone.
  std::chrono::milliseconds round();
  static inline const char* name = "janitor";
};

caf::behavior janitor(caf::stateful_actor<janitor_state>* self,
                      context_ptr ctx);

} // namespace ef
