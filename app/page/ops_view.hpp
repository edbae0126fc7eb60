#pragma once

#include "actors/gauges.hpp"
#include "persistence/consumer_controls.hpp"
#include "persistence/ops_queries.hpp"
#include "persistence/repair_store.hpp"
#include <eventforge/config/settings.hpp>

#include <chrono>
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
  /// Per consumer: paused or not, and its members seen lately (node, state,
  /// partitions), as they report themselves in the database.
  struct consumer_members {
    std::string consumer;
    persistence::control_row control;
    std::vector<persistence::member_row> members;
  };
  std::vector<consumer_members> consumers;
  /// Why the database's part was not read; empty when it was.
  std::string database_not_read;
  /// Why the broker's part (lag) was not read; empty when it was.
  std::string broker_not_read;
  /// True if a source that was asked for could not be read.
  bool partial() const {
    return !database_not_read.empty() ||
           (!broker_not_read.empty() && !no_broker_given);
  }
  bool no_broker_given = false;
};

/// Reads what it can: the database's part, then the broker's (at most
/// `broker_wait` for it: a broker that does not answer, or a client that
/// hangs once its broker went away, never holds the rest). Never throws:
/// each part that cannot be read says why in its place. With no `brokers`
/// only the database's part is read (broker_not_read says so).
ops_view
read_ops_view(const config::settings& cfg, const std::string& dsn,
              const std::string& brokers,
              std::chrono::milliseconds broker_wait = std::chrono::seconds(5));

/// The repair history as JSON (for /readyz details and scripts).
std::string repair_json(const persistence::repair_summary& r);

/// One screen of text for `eventforge status`.
std::string to_text(const ops_view& v, const config::settings& cfg);

} // namespace ef::app
