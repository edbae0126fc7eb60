#pragma once

#include <eventforge/config/settings.hpp>

#include <string>
#include <vector>

namespace caf {
class actor_system_config;
}

namespace ef::app {

/// Parameters of one chaos run (beyond the config keys, which choose the
/// crash points, rate and seed).
struct chaos_plan {
  int orders = 1000;
  int concurrency = 8;
  double cancel_share = 0.2; ///< share of orders cancelled after creation
  int timeout_s = 600;       ///< bound on the wait for quiescence
  std::string report_file;   ///< JSON report, if set
  /// Times the in-process broker is replaced by a new, empty one while the
  /// orders stream in (the tree restarts with it, as `serve` would).
  int broker_restarts = 0;
  /// Orders written straight into the outbox before the run, as if they
  /// had piled up while the pipeline was stopped.
  long backlog = 0;
  /// Publish the backlog while the consumers are down, so that the broker
  /// trims it before they read it (a consumer group down past retention).
  bool backlog_past_retention = false;
  /// Kafka-side faults to inject in turn (leader, down, rtt, errors,
  /// coordinator, or all), drawn from chaos.seed; in-process broker only.
  std::vector<std::string> broker_faults;
  /// How many of them, at evenly spaced points of the orders.
  int broker_fault_count = 20;
};

/// Starts the whole system (embedded or configured services), drives the
/// orders through the real HTTP API while crash points fire, waits for
/// quiescence, runs the verifier and prints a report. Returns the process
/// exit status: 0 only if every invariant holds. The actor system is created
/// from `caf_cfg` (the parsed INI file and command line, so their
/// [scheduler] options apply); it must not have created one before.
int run_chaos(const config::settings& cfg, const chaos_plan& plan,
              caf::actor_system_config& caf_cfg);

/// The same on CAF's defaults (tests, and hosts without a CAF configuration).
int run_chaos(const config::settings& cfg, const chaos_plan& plan);

} // namespace ef::app
