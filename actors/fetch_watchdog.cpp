#include "actors/fetch_watchdog.hpp"

#include <eventforge/config/logging.hpp>

#include <algorithm>

namespace ef {

void fetch_watchdog::find_stalled(
  partition_flow& flow, kafka::group_client& client, gap_ledger& ledger,
  telemetry& metrics, partition_flow::clock::time_point now,
  std::map<std::int32_t, std::int64_t>& restart) const {
  for (auto p : flow.unfed_since(stall_after_, now)) {
    if (restart.count(p) != 0)
      continue;
    // Nothing in flight: every record handed over is applied, so the next
    // one to read is where the applied ones end (or the committed offset).
    auto next = flow.next_offset(p);
    kafka::group_client::watermarks marks;
    try {
      if (next < 0)
        next = client.committed(p);
      marks = client.query_watermarks(p);
    } catch (const std::exception& e) {
      // The broker cannot answer now (an outage says so elsewhere).
      ef::log::info("{}: partition {}: cannot check for a stalled fetch: {}",
                    consumer_, p, e.what());
      continue;
    }
    if (marks.high <= std::max(next, marks.low))
      continue; // idle: nothing to read
    metrics.add("consumer_fetch_stalls_total", {{"consumer", consumer_}});
    // What the client itself said about the partition, when its debug
    // contexts are on for this member (kafka.debug-contexts): the evidence
    // that names the cause of a stall.
    auto lines = client.recent_debug(p);
    if (lines.empty())
      ef::log::warn("{}: partition {}: no librdkafka debug lines kept (set "
                    "kafka.debug-contexts=fetch,consumer,cgrp,topic and "
                    "kafka.debug-consumers={} to capture the next stall)",
                    consumer_, p, consumer_);
    for (size_t i = lines.size() > 60 ? lines.size() - 60 : 0; i < lines.size();
         ++i)
      ef::log::warn("{}: partition {}: librdkafka: {}", consumer_, p, lines[i]);
    ef::log::warn(
      "{}: partition {}: fed nothing for {} s with offsets {}..{} "
      "on the broker and nothing in flight; restarting its fetch "
      "at {}",
      consumer_, p,
      std::chrono::duration_cast<std::chrono::seconds>(stall_after_).count(),
      std::max(next, marks.low), marks.high,
      next < 0 ? "the log start (no committed offset)"
               : "offset " + std::to_string(next));
    restart[p] =
      next < 0 ? settle_lost_position(ledger, client, metrics, consumer_, p, -1)
                   .resume_at
               : next;
  }
}

void fetch_watchdog::inject_stalls(const partition_flow& flow,
                                   kafka::group_client& client,
                                   chaos& faults) const {
  if (!faults.fetch_stall_armed())
    return;
  for (auto& [p, s] : flow.slots())
    if (faults.take_fetch_stall(consumer_, p)) {
      ef::log::info("{}: partition {}: fetch stopped silently (injected)",
                    consumer_, p);
      client.pause(p);
    }
}

} // namespace ef
