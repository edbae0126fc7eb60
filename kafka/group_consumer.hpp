#pragma once

#include "kafka/connection.hpp"
#include "messages/tree_messages.hpp"

#include "kafka/group_client.hpp"
#include <eventforge/messages/events.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ef::kafka {

/// A member of a Kafka consumer group on one topic, with auto-commit and
/// auto offset store OFF: offsets move only through commit(). It never
/// jumps over records it did not read: auto.offset.reset is "error", so a
/// position that is no longer on the broker is reported (position_lost)
/// and the partition waits for the owner's decision. Partition
/// assignment changes are reported through the callbacks, which run inside
/// poll() on the caller's thread. Not thread-safe: one owner (the group
/// member actor) calls everything.
class group_consumer : public group_client {
public:
  using callbacks = group_client::callbacks;
  using watermarks = group_client::watermarks;

  /// `debug_contexts`: librdkafka debug contexts (e.g.
  /// "fetch,consumer,cgrp,topic") whose lines are kept in memory, the last
  /// 5,000, for recent_debug(); "" (the default) turns debugging off.
  group_consumer(const connection& cluster, const std::string& group,
                 const std::string& topic, int session_timeout_ms,
                 int fetch_wait_max_ms, callbacks cbs,
                 const std::string& debug_contexts = {});
  ~group_consumer() override;

  /// Waits up to `timeout_ms` for the next record of any owned partition.
  /// Transient client errors are logged and yield nullopt.
  std::optional<partition_record> poll(int timeout_ms) override;

  /// Commits "next offset to read" per partition, synchronously. Returns an
  /// error text on failure (e.g. the partition was revoked meanwhile).
  caf::error commit(const std::vector<std::pair<std::int32_t, std::int64_t>>&
                      next_offsets) override;

  /// The group's committed next offset for `partition` (-1: none), asked
  /// for at most 5 s.
  std::int64_t committed(std::int32_t partition) override;

  /// Repositions an owned partition; fetched-but-unconsumed records are
  /// dropped, so the next poll starts exactly at `offset` (-1: the log
  /// start).
  void seek(std::int32_t partition, std::int64_t offset) override;

  /// Restarts fetching of owned partitions at the given offsets (-1: the log
  /// start), including partitions stopped after position_lost (which seek()
  /// cannot move). Every other owned partition continues exactly where the
  /// application is. Afterwards exactly the partitions in `paused` are
  /// paused; they are set before the new assignment, never right after it
  /// (see pause()).
  void restart_at(const std::map<std::int32_t, std::int64_t>& offsets,
                  const std::set<std::int32_t>& paused) override;

  /// Asks the broker for the partition's current log start and end (5 s).
  watermarks query_watermarks(std::int32_t partition) override;

  /// Pause and resume an owned, fetching partition. Never call them for a
  /// partition just assigned (by the rebalance or restart_at) before it
  /// delivered a record: librdkafka 2.0.2 starts a new assignment's fetch
  /// from its own thread, and a pause or resume racing that start can make
  /// it drop the start as outdated, leaving the partition silent for good
  /// (docs/notes/2026-12-04-fetch-stall.md). Assignments therefore take
  /// their pause state before they are made (callbacks::starts_paused,
  /// restart_at's `paused`).
  void pause(std::int32_t partition) override;
  void resume(std::int32_t partition) override;
  void resume_at_once(std::int32_t partition, std::int64_t offset) override;
  void wake() override;

  /// The captured librdkafka debug lines (see the constructor) that name
  /// `partition` of the topic, oldest first; empty without debugging.
  std::vector<std::string> recent_debug(std::int32_t partition) const override;

  /// Leaves the group (revoking everything) and closes the client, waiting
  /// at most 5 s: a broker that does not answer must not hold up a
  /// shutdown. Past the limit the group notices the member's absence after
  /// its session timeout instead.
  void close() override;

  const std::string& topic() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ef::kafka
