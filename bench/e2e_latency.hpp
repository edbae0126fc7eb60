#pragma once

#include <map>
#include <string>
#include <vector>

namespace ef::bench {

struct latency_summary {
  long samples = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
};

/// End-to-end latencies of a set of orders, read from the database's own
/// clocks after the fact (no client clock, no sampling in the hot path).
struct e2e_latency {
  /// "commit timestamps" (track_commit_timestamp: commit times of the
  /// order's, the mark's and each effect's transactions) or, when the server
  /// does not track them, "insert clocks" (clock_timestamp() at the inserts).
  std::string clock;
  latency_summary published; ///< order commit -> relay's "sent" mark commit
  std::map<std::string, latency_summary> consumers; ///< order -> effect commit
};

/// Latencies of the OrderCreated events of orders whose customer_id matches
/// the LIKE pattern `customers`, once every consumer has applied them.
e2e_latency measure_e2e(const std::string& dsn, const std::string& customers,
                        const std::vector<std::string>& consumers);

/// One order's spans, in milliseconds from its commit.
struct order_spans {
  double published_ms = 0;   ///< the relay's "sent" mark commit
  double last_effect_ms = 0; ///< the last consumer's effect commit
};

/// The spans of each OrderCreated event of orders whose customer_id matches
/// `customers` that every consumer in `consumers` applied, in commit order,
/// on the same clocks as measure_e2e.
std::vector<order_spans>
spans_per_order(const std::string& dsn, const std::string& customers,
                const std::vector<std::string>& consumers);

} // namespace ef::bench
