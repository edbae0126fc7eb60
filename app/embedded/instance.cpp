#include <eventforge/embedded/instance.hpp>

#include <eventforge/config/logging.hpp>

namespace ef {

namespace {

/// [log] applied before anything logs: the services' start-up lines (the
/// private cluster, the broker) come before ef::start, which applies it
/// again.
const config::settings& with_logging(const config::settings& cfg) {
  log::apply(cfg);
  return cfg;
}

} // namespace

instance::instance(caf::actor_system& sys, const config::settings& cfg,
                   options opts)
    : sys_(sys), cfg_(with_logging(cfg)), services_(cfg_),
      metrics_(opts.metrics ? std::move(opts.metrics)
                            : std::make_shared<telemetry>()) {
  // If start() throws, no tree runs and ~runtime stops the services.
  root_ = start(sys_, cfg_, services_.where(), metrics_, nullptr,
                std::move(opts.consumers));
}

instance::~instance() {
  shutdown();
}

bool instance::shutdown(std::chrono::milliseconds timeout) {
  if (shut_down_)
    return true;
  shut_down_ = true;
  auto report = drain(
    sys_, root_, std::chrono::milliseconds(cfg_.shutdown.drain_timeout_ms));
  if (!report.drained)
    ef::log::warn("EventForge stops without a full drain (not drained: {}); "
                  "what it held is redelivered after the next start",
                  report.not_drained.size());
  if (stop(sys_, root_, timeout))
    return true;
  ef::log::error("EventForge's tree did not stop within {} ms: the actor "
                 "system's destructor will wait for its remaining actors",
                 timeout.count());
  return false;
}

} // namespace ef
