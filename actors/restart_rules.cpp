#include "actors/restart_rules.hpp"

#include "actors/crash_log.hpp"
#include <eventforge/config/logging.hpp>

#include <stdexcept>

namespace ef {

restart_rules::restart_rules(const config::settings& cfg,
                             std::shared_ptr<telemetry> metrics,
                             std::string supervisor_label)
    : backoff_(config::restart_backoff(cfg)), metrics_(std::move(metrics)),
      label_(std::move(supervisor_label)),
      intensity_(cfg.supervisor.max_restarts,
                 std::chrono::seconds(cfg.supervisor.restart_window_s)) {
  // nop
}

config::backoff restart_rules::new_backoff() const {
  return config::backoff(backoff_);
}

std::chrono::milliseconds
restart_rules::on_crash(const std::string& kind, const std::string& name,
                        const caf::error& reason, const std::string& rendered,
                        config::backoff& child_backoff,
                        restart_policy::clock::time_point now) {
  // Counted before the intensity check, so an escalating crash counts too.
  metrics_->add("actor_restarts_total",
                {{"kind", kind}, {"reason", reason_class(reason)}});
  // An outage of the database is waited out here: restarting our own
  // supervisor would not bring it back, so it never counts towards
  // escalation (the backoff still paces the restarts).
  if (!is_outage(reason) && !intensity_.allow(now))
    throw std::runtime_error(label_ + ": restart intensity exceeded after " +
                             name + " crashed (" + rendered + ")");
  // Exponential backoff per child, so a dependency outage does not spin a
  // core. A child that stayed up for supervisor.restart-healthy-after-ms was
  // healthy: its next crash starts the backoff afresh, so only crash loops
  // climb to the cap.
  auto delay = child_backoff.failed(now);
  // An outage restarts its children again and again until it ends: warn at
  // the first crash of a row, the rest at debug.
  ef::log::at(is_outage(reason) && child_backoff.failures_in_a_row() > 1
                ? spdlog::level::debug
                : spdlog::level::warn,
              "{}: {} crashed ({}); restarting in {} ms", label_, name,
              rendered, delay.count());
  return delay;
}

} // namespace ef
