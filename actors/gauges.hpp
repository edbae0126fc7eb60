#pragma once

// What the gauge and lag samplers compute, without the actors: the page and
// `eventforge status` read the same numbers the same way.

#include "kafka/offsets.hpp"
#include "persistence/ops_queries.hpp"
#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ef {

/// One consumer's position on one partition.
struct partition_lag {
  int partition;
  long long log_end;
  long long committed; ///< -1: nothing committed yet
  long long lag;       ///< log end minus committed (from the log start if -1)
};

/// consumer -> its lag on every partition.
using lag_by_consumer = std::map<std::string, std::vector<partition_lag>>;

/// A group's lag on each partition from the log ends and its committed
/// offsets (-1: nothing committed yet; the group then starts at the log
/// start, so everything up to the log end is lag). The one formula behind
/// the consumer_lag gauges, `eventforge status` and the page's overview.
std::vector<partition_lag> lag_of(const std::vector<std::int64_t>& log_end,
                                  const std::vector<std::int64_t>& committed);

/// Reads every enabled consumer's lag from the broker (throws if the broker
/// does not answer within `timeout_ms` per request).
lag_by_consumer read_lag(const config::settings& cfg,
                         kafka::offset_reader& broker, int timeout_ms);

/// Sets the outbox and DLQ gauges from a database snapshot.
void export_row_gauges(const persistence::ops_rows& rows, telemetry& m);

/// Sets the consumer_lag gauges.
void export_lag(const lag_by_consumer& lag, telemetry& m);

} // namespace ef
