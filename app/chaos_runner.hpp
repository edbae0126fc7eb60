#pragma once

#include "config/settings.hpp"

#include <string>

namespace ef::app {

/// Parameters of one chaos run (beyond the config keys, which choose the
/// crash points, rate and seed).
struct chaos_plan {
  int orders = 1000;
  int concurrency = 8;
  double cancel_share = 0.2; ///< share of orders cancelled after creation
  int timeout_s = 600;       ///< bound on the wait for quiescence
  std::string report_file;   ///< JSON report, if set
};

/// Starts the whole system (embedded or configured services), drives the
/// orders through the real HTTP API while crash points fire, waits for
/// quiescence, runs the verifier and prints a report. Returns the process
/// exit status: 0 only if every invariant holds.
int run_chaos(const config::settings& cfg, const chaos_plan& plan);

} // namespace ef::app
