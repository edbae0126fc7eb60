#pragma once

#include <eventforge/config/settings.hpp>

#include <string>
#include <vector>

namespace caf {
class actor_system_config;
}

namespace ef::app {

/// What `eventforge bench` measures; every phase runs in the same process
/// against the same database and broker, so the ratios compare like with
/// like.
struct bench_plan {
  int seconds = 20;                  ///< each pgbench and HTTP phase
  std::vector<int> clients{16, 256}; ///< keep-alive HTTP clients per phase
  /// Fixed rate of the latency phase, orders/s; 0: half of what the first
  /// HTTP phase reached.
  double rate = 0;
  long backlog = 1000000; ///< orders written while the pipeline is stopped
  /// Orders seeded into the scratch schema for the consumer and relay
  /// baselines.
  long seed_orders = 200000;
  /// The cost phase: orders/s of each fixed-rate run, seconds of each (0:
  /// no cost phase), and seconds the idle pipeline is watched.
  std::vector<double> cost_rates{100, 400, 800};
  int cost_seconds = 20;
  int idle_seconds = 20;
  /// The lone phase: orders sent one at a time at random gaps of 0.2-5 s,
  /// the first right after the pipeline is ready (0: skip).
  int lone_orders = 25;
  /// Seconds between a cost run's end and the read of the database's
  /// counters, which idle backends publish within 10 s (bench/cost.hpp).
  int stats_settle_s = 11;
  int timeout_s = 7200;    ///< bound on each wait for the pipeline to drain
  std::string report_path; ///< JSON report, if set
};

/// Runs every phase, prints the figures and their ratios, writes the report.
/// Returns 0 when the verifier found nothing lost or doubled, 1 otherwise,
/// 2 when the bench could not run. The actor system is created from
/// `caf_cfg` (the parsed INI file and command line, so their [scheduler]
/// options apply); it must not have created one before.
int run_bench(const config::settings& cfg, const bench_plan& plan,
              caf::actor_system_config& caf_cfg);

/// Prints the main figures of bench reports (--report files, e.g. one per
/// topology, bench/topologies.sh) side by side, one column per report.
/// Returns 0, or 2 if a file cannot be read as a report.
int compare_bench_reports(const std::vector<std::string>& labels,
                          const std::vector<std::string>& paths);

/// The same on CAF's defaults (tests, and hosts without a CAF configuration).
int run_bench(const config::settings& cfg, const bench_plan& plan);

} // namespace ef::app
