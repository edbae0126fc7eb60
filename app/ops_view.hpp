#pragma once

#include "actors/telemetry.hpp"
#include "config/settings.hpp"
#include "persistence/ops_queries.hpp"
#include "persistence/repair_store.hpp"

#include <map>
#include <string>
#include <vector>

namespace ef::app {

/// The operator's picture of a running system, from its durable sources
/// (database rows, broker offsets): what /metrics exports as gauges and what
/// `eventforge status` prints.
struct ops_view {
  persistence::ops_rows rows;
  persistence::repair_summary repair;
  /// consumer -> per partition: log end, committed, lag.
  struct partition_lag {
    int partition;
    long long log_end;
    long long committed;
    long long lag;
  };
  std::map<std::string, std::vector<partition_lag>> lag;
};

/// Reads the view; throws if the database or broker cannot be read.
ops_view read_ops_view(const config::settings& cfg, const std::string& dsn,
                       const std::string& brokers);

/// Fills v.lag from the broker (timeout per request).
void read_lag(const config::settings& cfg, const std::string& brokers,
              ops_view& v, int timeout_ms = 10000);

/// Sets the database-derived gauges of `m` from the view.
void export_gauges(const ops_view& v, telemetry& m);

/// Sets the consumer_lag gauges of `m` from the view.
void export_lag(const ops_view& v, telemetry& m);

/// The repair history as JSON (for /readyz details and scripts).
std::string repair_json(const persistence::repair_summary& r);

/// One screen of text for `eventforge status`.
std::string to_text(const ops_view& v, const config::settings& cfg);

} // namespace ef::app
