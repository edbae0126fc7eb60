#pragma once

#include "kafka/errors.hpp"
#include "messages/tree_messages.hpp"
#include <eventforge/messages/events.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ef::kafka {

/// What a consumer group member needs of its Kafka client: the real one is
/// group_consumer (librdkafka); deterministic actor tests give a fake. Not
/// thread-safe: one owner calls everything, and the callbacks run inside
/// its poll().
class group_client {
public:
  struct callbacks {
    /// Partitions just assigned to this member.
    std::function<void(const std::vector<std::int32_t>&)> assigned;
    /// Partitions about to be taken away (stop working on them now).
    std::function<void(const std::vector<std::int32_t>&)> revoked;
    /// The position of `partition` is not on the broker (trimmed, or a log
    /// that is new): the client stopped fetching it instead of jumping.
    /// `offset` is the position it could not read, -1 if the group had none.
    /// Fetching resumes only after restart_at().
    std::function<void(std::int32_t partition, std::int64_t offset)>
      position_lost;
    /// Whether a partition about to be assigned must start paused (a drain
    /// in progress); unset: none does.
    std::function<bool(std::int32_t partition)> starts_paused;
    /// `partition` was read to the end of its log: `next_offset` is where
    /// the broker's log ends now. Once per end reached (again after every
    /// pause and resume).
    std::function<void(std::int32_t partition, std::int64_t next_offset)>
      at_end;
  };

  /// A partition's log as the broker holds it now: [low, high).
  struct watermarks {
    std::int64_t low = 0;
    std::int64_t high = 0;
  };

  virtual ~group_client() = default;

  /// Waits up to `timeout_ms` for the next record of any owned partition.
  virtual std::optional<partition_record> poll(int timeout_ms) = 0;

  /// Commits "next offset to read" per partition: none, or the failure
  /// (kafka_errc: unavailable, rebalancing, refused, fatal).
  virtual caf::error
  commit(const std::vector<std::pair<std::int32_t, std::int64_t>>& next) = 0;

  /// The group's committed next offset for `partition` (-1: none); throws
  /// if the broker cannot tell.
  virtual std::int64_t committed(std::int32_t partition) = 0;

  /// Repositions an owned partition (-1: the log start); fetched but
  /// unconsumed records are dropped.
  virtual void seek(std::int32_t partition, std::int64_t offset) = 0;

  /// Restarts fetching of owned partitions at the given offsets (-1: the
  /// log start); afterwards exactly `paused` are paused.
  virtual void restart_at(const std::map<std::int32_t, std::int64_t>& at,
                          const std::set<std::int32_t>& paused) = 0;

  /// The broker's log start and end of `partition`; throws if it cannot
  /// tell.
  virtual watermarks query_watermarks(std::int32_t partition) = 0;

  virtual void pause(std::int32_t partition) = 0;
  virtual void resume(std::int32_t partition) = 0;

  /// Resumes a paused partition at `offset` (where it was paused) and gets
  /// its fetch going at once: a plain resume is fetched only when the
  /// client next looks at its partitions, up to a second later.
  virtual void resume_at_once(std::int32_t partition, std::int64_t offset) {
    (void)offset;
    resume(partition);
  }

  /// Makes a poll() in progress on another thread return now (or the next
  /// one, if none is). The one call that is thread-safe.
  virtual void wake() {}

  /// Kept client debug lines naming `partition` (empty if none are kept).
  virtual std::vector<std::string> recent_debug(std::int32_t partition) const {
    (void)partition;
    return {};
  }

  /// Leaves the group and closes the client, bounded.
  virtual void close() = 0;
};

} // namespace ef::kafka
