#pragma once

#include "actors/gauges.hpp"
#include "persistence/ops_queries.hpp"
#include "persistence/repair_store.hpp"
#include <eventforge/config/settings.hpp>

#include <map>
#include <string>
#include <vector>

namespace ef::app {

/// The operator's picture of a running system, from its durable sources
/// (database rows, broker offsets): what `eventforge status` prints (the
/// tree's gauge sampler exports the same sources as gauges).
struct ops_view {
  persistence::ops_rows rows;
  persistence::repair_summary repair;
  lag_by_consumer lag;
  /// Why the broker's part (lag) was not read; empty when it was.
  std::string broker_not_read;
};

/// Reads the view; throws if the database or broker cannot be read. With
/// no `brokers` only the database's part is read (broker_not_read says so).
ops_view read_ops_view(const config::settings& cfg, const std::string& dsn,
                       const std::string& brokers);

/// The repair history as JSON (for /readyz details and scripts).
std::string repair_json(const persistence::repair_summary& r);

/// One screen of text for `eventforge status`.
std::string to_text(const ops_view& v, const config::settings& cfg);

} // namespace ef::app
