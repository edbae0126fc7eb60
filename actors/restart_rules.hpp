#pragma once

#include "actors/restart_policy.hpp"
#include "config/backoff.hpp"
#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>

#include <caf/error.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace ef {

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
  /// (`rendered`: how the actor system prints it). Returns how long to wait
  /// before starting it again; throws std::runtime_error, which fails the
  /// supervisor (escalation), past the intensity.
  std::chrono::milliseconds on_crash(const std::string& kind,
                                     const std::string& name,
                                     const caf::error& reason,
                                     const std::string& rendered,
                                     config::backoff& child_backoff);

private:
  config::backoff_policy backoff_;
  std::shared_ptr<telemetry> metrics_;
  std::string label_;
  restart_policy intensity_;
};

} // namespace ef
