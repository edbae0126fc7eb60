#pragma once

#include "kafka/group_client.hpp"
#include "persistence/repair_store.hpp"
#include <eventforge/actors/telemetry.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace ef {

/// Where a consumer's group member reads the broker epoch and records what
/// the broker lost under it. The database's (persistence::repair_store) in
/// production; deterministic actor tests give a fake.
class gap_ledger {
public:
  virtual ~gap_ledger() = default;
  /// The current broker epoch. Throws if the database cannot tell.
  virtual int current_epoch() = 0;
  /// Records that `consumer` cannot read [from, to) of `partition` (log end
  /// `log_end`) and queues its unapplied events there again.
  virtual persistence::gap_record record_gap(const std::string& consumer,
                                             std::int32_t partition,
                                             std::int64_t from, std::int64_t to,
                                             std::int64_t log_end) = 0;
};

/// The ledger in the database at `dsn`.
std::unique_ptr<gap_ledger> database_gap_ledger(const std::string& dsn);

/// A lost position, settled: where the partition resumes (its log start),
/// and whether the log it was read from is gone altogether (a new broker, a
/// recreated topic), so that what the partition's actor holds is moot.
struct settled_position {
  std::int64_t resume_at = 0;
  bool log_replaced = false;
};

/// Settles a position of `partition` the broker no longer holds (-1: none
/// was committed): never skips it silently. Records the gap and queues the
/// events in it that `consumer` has not applied again (one transaction),
/// logs and counts it. Throws if the broker or the database cannot be
/// asked; the partition then stays stopped and the caller tries again.
settled_position
settle_lost_position(gap_ledger& ledger, kafka::group_client& client,
                     telemetry& metrics, const std::string& consumer,
                     std::int32_t partition, std::int64_t offset);

} // namespace ef
