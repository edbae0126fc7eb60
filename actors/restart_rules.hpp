#pragma once

#include "actors/restart_policy.hpp"
#include "config/backoff.hpp"
#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>

#include <caf/actor_clock.hpp>
#include <caf/error.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>

namespace ef {

// Supervisors, group members, restart intensity and backoff take their time
// from the actor clock, whose time points must be the steady clock's (the
// config layer does not depend on CAF).
static_assert(std::is_same_v<caf::actor_clock::time_point,
                             restart_policy::clock::time_point> &&
                std::is_same_v<caf::actor_clock::time_point,
                               config::backoff::clock::time_point>,
              "the actor clock's time points are the steady clock's");

/// How a supervisor answers a child's crash, the same for the tree's
/// supervisors and for a group member supervising its partition actors:
/// count it (`actor_restarts_total{kind,reason}`), log it, escalate past
/// the restart intensity (supervisor.max-restarts per
/// supervisor.restart-window-s) unless the crash was a database outage, and
/// wait the child's backoff (supervisor.restart-*) before the restart.
class restart_rules {
public:
  restart_rules(const config::settings& cfg, std::shared_ptr<telemetry> metrics,
                std::string supervisor_label);

  /// A child's backoff, by this configuration's restart policy.
  config::backoff new_backoff() const;

  /// Handles the crash of child `name` (of kind `kind`) with `reason`
  /// (`rendered`: how the actor system prints it) at `now`, the
  /// supervising actor's clock. Returns how long to wait
  /// before starting it again; throws std::runtime_error, which fails the
  /// supervisor (escalation), past the intensity.
  std::chrono::milliseconds on_crash(const std::string& kind,
                                     const std::string& name,
                                     const caf::error& reason,
                                     const std::string& rendered,
                                     config::backoff& child_backoff,
                                     restart_policy::clock::time_point now);

private:
  config::backoff_policy backoff_;
  std::shared_ptr<telemetry> metrics_;
  std::string label_;
  restart_policy intensity_;
};

} // namespace ef
