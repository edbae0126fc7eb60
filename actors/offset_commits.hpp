#pragma once

#include "actors/event_log.hpp"
#include "actors/partition_flow.hpp"
#include "kafka/group_client.hpp"
#include "messages/tree_messages.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/events.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace ef {

/// Commits what a group member's partition actors applied (partition_flow
/// says what), and writes each record's "offset_committed" trace hop once
/// the offset past it is committed. The hops are kept only while the log
/// shows debug lines (hops are debug lines): otherwise they cost nothing.
class offset_commits {
public:
  explicit offset_commits(std::string consumer)
      : consumer_(std::move(consumer)) {}

  /// Commits every partition whose applied position moved past its
  /// committed one (only those in `only`, if given); returns the failure
  /// (kafka_errc), none on success. A failed commit is not fatal: the records
  /// are applied, so a later commit (or the next owner's redelivery, suppressed
  /// as duplicates) settles it.
  caf::error commit(partition_flow& flow, kafka::group_client& client,
                    const std::vector<std::int32_t>* only = nullptr) {
    auto offsets = flow.to_commit(only);
    if (offsets.empty())
      return caf::none;
    if (auto err = client.commit(offsets)) {
      ef::log::warn("{}: offset commit failed: {}", consumer_,
                    kafka::describe(err));
      return err;
    }
    flow.committed(offsets);
    for (auto& [p, next] : offsets)
      committed(p, next);
    return caf::none;
  }

  /// A record of `d.partition` was done; its hop waits for the commit.
  void done(const record_done& d) {
    if (ef::log::line_logger().should_log(spdlog::level::debug))
      waiting_[d.partition].push_back(d);
  }

  /// The partition is gone (revoked, or its actor replaced).
  void forget(std::int32_t partition) { waiting_.erase(partition); }

private:
  /// Offset `next` of `partition` was committed: every record below it has
  /// its hop now.
  void committed(std::int32_t partition, std::int64_t next) {
    auto& q = waiting_[partition];
    while (!q.empty() && q.front().offset < next) {
      auto& d = q.front();
      event_log::hop("offset_committed", d.order_id, d.event_id, d.traceparent,
                     {{"consumer", consumer_},
                      {"partition", std::to_string(partition)},
                      {"offset", std::to_string(d.offset)}});
      q.pop_front();
    }
  }

  std::string consumer_;
  std::map<std::int32_t, std::deque<record_done>> waiting_;
};

} // namespace ef
