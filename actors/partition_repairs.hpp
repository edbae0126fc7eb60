#pragma once

#include "actors/fetch_watchdog.hpp"
#include "actors/gap_repair.hpp"
#include "actors/partition_flow.hpp"
#include "kafka/group_client.hpp"
#include <eventforge/actors/telemetry.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ef {

/// What a group member repairs once a second, so that it never jumps over a
/// record: positions the broker lost (each gap recorded and its unapplied
/// events queued again, then the partition resumes at the log start), a new
/// broker epoch (every owned partition is reread from the start; duplicates
/// are suppressed), and fetches that went quiet (fetch_watchdog).
class partition_repairs {
public:
  partition_repairs(std::string consumer, std::unique_ptr<gap_ledger> ledger,
                    std::chrono::milliseconds stall_after);

  /// The client lost the position of `partition` at `offset` (-1: none was
  /// committed); settled by the next run().
  void lost(std::int32_t partition, std::int64_t offset);

  const fetch_watchdog& watchdog() const { return watchdog_; }

  /// A new broker epoch may have begun (its NOTIFY, or no session to hear
  /// one on): the next run reads the epoch. Otherwise a run reads it only
  /// every 30 s, the safety net.
  void epoch_news() { epoch_due_ = true; }

  /// One run: settles what is due, calls `replace_worker` for each
  /// partition whose actor holds records of a log that is gone, and
  /// restarts the fetch of every partition that needs it (its pause state
  /// set before, never right after: docs/notes/2026-12-04-fetch-stall.md).
  /// If the database or the broker cannot be asked, it logs that (once per
  /// outage at warn) and the lost positions stay queued, their partitions
  /// stopped, until a later run settles them: nothing is skipped.
  void run(partition_flow& flow, kafka::group_client& client,
           telemetry& metrics, partition_flow::clock::time_point now,
           const std::function<void(std::int32_t)>& replace_worker);

private:
  void run_once(partition_flow& flow, kafka::group_client& client,
                telemetry& metrics, partition_flow::clock::time_point now,
                const std::function<void(std::int32_t)>& replace_worker);

  std::string consumer_;
  bool failing_ = false;
  std::unique_ptr<gap_ledger> ledger_;
  fetch_watchdog watchdog_;
  std::map<std::int32_t, std::int64_t> lost_;
  int epoch_ = 0; ///< broker epoch the positions belong to (0: not read yet)
  bool epoch_due_ = true;
  partition_flow::clock::time_point next_epoch_read_{};
};

} // namespace ef
