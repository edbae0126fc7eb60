#pragma once

#include "actors/chaos.hpp"
#include "actors/gap_repair.hpp"
#include "actors/partition_flow.hpp"
#include "kafka/group_client.hpp"
#include <eventforge/actors/telemetry.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace ef {

/// The last resort against a fetch that stops without an error (the cause
/// known so far is avoided: docs/notes/2026-12-04-fetch-stall.md). An
/// owned partition fed nothing for `stall_after`, with nothing in flight
/// and no pause, whose log on the broker reaches past what its actor
/// applied, has stalled: it is logged (with the client's debug lines, when
/// kept) and counted (consumer_fetch_stalls_total), and this returns where
/// to restart its fetch: exactly where its applied records end, so nothing
/// is fetched twice. An idle partition costs one log-end read per period.
class fetch_watchdog {
public:
  fetch_watchdog(std::string consumer, std::chrono::milliseconds stall_after)
      : consumer_(std::move(consumer)), stall_after_(stall_after) {}

  /// Adds each stalled partition (not already in `restart`) with the
  /// offset to restart it at.
  void find_stalled(partition_flow& flow, kafka::group_client& client,
                    gap_ledger& ledger, telemetry& metrics,
                    partition_flow::clock::time_point now,
                    std::map<std::int32_t, std::int64_t>& restart) const;

  /// The chaos fault `stall_fetch`: pauses an armed partition in the
  /// client behind flow control's back, as a fetcher that stops silently
  /// would (what the watchdog is for).
  void inject_stalls(const partition_flow& flow, kafka::group_client& client,
                     chaos& faults) const;

private:
  std::string consumer_;
  std::chrono::milliseconds stall_after_;
};

} // namespace ef
