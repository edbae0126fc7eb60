#pragma once

#include "kafka/outbox_producer.hpp"
#include "persistence/outbox_store.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ef {

/// The rows a relay has handed to its producer and not yet seen reported.
/// Reports come per record as the broker answers, so rows bound for a
/// partition whose leader is moving wait alone while the rows of the other
/// partitions are acknowledged and marked (issue 42.4).
///
/// Per-order order is the producer's: one order's rows share a key, hence a
/// partition, and an idempotent producer delivers a partition's records in
/// the order sent. What the window adds is the gap check: once a row of an
/// order failed, a later row of that order acknowledged means the topic
/// holds them out of order, and the relay must restart and republish.
class relay_window {
public:
  using clock = std::chrono::steady_clock;

  /// A row the broker acknowledged.
  struct acked_row {
    persistence::outbox_row row;
    int epoch = 0; ///< the broker epoch it was read under
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    clock::time_point claimed_at;
  };

  /// What one batch of reports settled.
  struct settlement {
    std::vector<acked_row> acked; ///< in report order
    std::vector<std::int64_t> failed;
    std::string first_error;
  };

  /// Takes `rows`, read under `epoch`, sent with tickets
  /// `first_ticket`, `first_ticket + 1`, ...
  void sent(int epoch, const std::vector<persistence::outbox_row>& rows,
            std::uint64_t first_ticket, clock::time_point claimed_at);

  /// Settles these reports. Throws if a row is acknowledged after an
  /// earlier row of its order failed (a delivery gap). Reports of tickets
  /// not in the window (a tool's, an abandoned batch's) are ignored.
  settlement settle(std::vector<kafka::ticketed_delivery> reports);

  /// The seqs in flight, for the next read to leave out.
  std::vector<std::int64_t> seqs() const;
  std::size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  /// Whether a row failed since the window was last forgiven.
  bool failing() const { return !failed_orders_.empty(); }
  /// Forgets the failures once the window is empty: the failed rows are
  /// unsent again and the next read starts from them.
  void forgive() { failed_orders_.clear(); }

private:
  struct entry {
    persistence::outbox_row row;
    int epoch = 0;
    clock::time_point claimed_at;
  };
  std::map<std::uint64_t, entry> rows_; ///< by ticket, i.e. in send order
  std::set<std::string> failed_orders_;
};

} // namespace ef
