#pragma once

#include "kafka/connection.hpp"
#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ef::persistence {
class scenario_arm_store;
} // namespace ef::persistence

namespace ef::app {

/// What the live recovery page shows, read from durable state (PostgreSQL
/// rows, the recovery journal) and the broker (log ends, committed offsets):
/// after a restart it shows the same numbers, unlike in-memory counters.
///
/// Reads are cached briefly so that many open pages cost the database and
/// the broker what one does: the overview at most once per second, broker
/// offsets at most every 250 ms. A value shown may be that stale. Safe to
/// call from several threads.
class recovery_view {
public:
  recovery_view(const config::settings& cfg, std::string dsn,
                std::string brokers, std::shared_ptr<telemetry> metrics);

  /// The overview (see docs/recovery-page.md); a source that cannot be read
  /// is reported as unavailable, never as zeros.
  nlohmann::json overview();

  /// One order's trace, or nullopt if there is no such order; for an order
  /// a scenario placed, where its crash was armed and which node fired it
  /// ("scenario"). Throws persistence::db_error if the database cannot be
  /// read.
  std::optional<nlohmann::json> trace(const std::string& order_id);

private:
  /// Log ends and each consumer group's committed offsets, per partition.
  struct broker_positions {
    bool ok = false;
    std::string error;
    std::vector<std::int64_t> log_end;
    std::map<std::string, std::vector<std::int64_t>> committed;
  };
  broker_positions positions();
  nlohmann::json read_overview();
  /// Rates and latency per stage (API, relay, each consumer) from the
  /// process's histograms, over the window since the oldest reading kept
  /// (up to 30 s). Needs overview_mtx_.
  nlohmann::json read_stages();

  config::settings cfg_;
  std::string dsn_;
  kafka::connection cluster_;
  std::shared_ptr<telemetry> metrics_;
  /// The scenario arms (scenario_arms), read for a trace.
  std::shared_ptr<persistence::scenario_arm_store> arms_;

  std::mutex positions_mtx_; ///< one broker read at a time, shared
  broker_positions positions_;
  std::chrono::steady_clock::time_point positions_at_{};

  std::mutex overview_mtx_;
  nlohmann::json overview_;
  std::chrono::steady_clock::time_point overview_at_{};
  /// Histogram readings by stage, oldest first (read_stages).
  struct stage_reading {
    std::chrono::steady_clock::time_point at;
    std::vector<telemetry::histogram_state> stages;
  };
  std::vector<stage_reading> stage_readings_;
};

} // namespace ef::app
