#pragma once

#include "actors/chaos.hpp"
#include "actors/telemetry.hpp"
#include "config/settings.hpp"

#include <memory>
#include <string>

namespace ef {

/// What every actor of one EventForge tree shares, immutable after start:
/// settings, where the database and broker are, the telemetry counters and
/// the crash-point decisions.
struct context {
  config::settings cfg;
  std::string dsn;     ///< database, with connect_timeout applied
  std::string brokers; ///< Kafka bootstrap servers
  std::shared_ptr<telemetry> metrics;
  std::shared_ptr<chaos> faults;
};

using context_ptr = std::shared_ptr<const context>;

} // namespace ef
