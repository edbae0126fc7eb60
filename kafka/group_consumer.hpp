#pragma once

#include "messages/events.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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
class group_consumer {
public:
  struct callbacks {
    /// Partitions just assigned to this member.
    std::function<void(const std::vector<std::int32_t>&)> assigned;
    /// Partitions about to be taken away (stop working on them now).
    std::function<void(const std::vector<std::int32_t>&)> revoked;
    /// The position of `partition` is not on the broker (trimmed, or a log
    /// that is new): the client stopped fetching it instead of jumping.
    /// `offset` is the position it could not read, -1 if the group had none.
    /// Fetching resumes only after a seek().
    std::function<void(std::int32_t partition, std::int64_t offset)>
      position_lost;
  };

  /// A partition's log as the broker holds it now: [low, high).
  struct watermarks {
    std::int64_t low = 0;
    std::int64_t high = 0;
  };

  group_consumer(const std::string& brokers, const std::string& group,
                 const std::string& topic, int session_timeout_ms,
                 int fetch_wait_max_ms, callbacks cbs);
  ~group_consumer();

  /// Waits up to `timeout_ms` for the next record of any owned partition.
  /// Transient client errors are logged and yield nullopt.
  std::optional<partition_record> poll(int timeout_ms);

  /// Commits "next offset to read" per partition, synchronously. Returns an
  /// error text on failure (e.g. the partition was revoked meanwhile).
  std::string commit(
    const std::vector<std::pair<std::int32_t, std::int64_t>>& next_offsets);

  /// The group's committed next offset for `partition` (-1: none).
  std::int64_t committed(std::int32_t partition, int timeout_ms = 5000);

  /// Repositions an owned partition; fetched-but-unconsumed records are
  /// dropped, so the next poll starts exactly at `offset` (-1: the log
  /// start).
  void seek(std::int32_t partition, std::int64_t offset);

  /// Restarts fetching of owned partitions at the given offsets (-1: the log
  /// start), including partitions stopped after position_lost (which seek()
  /// cannot move). Every other owned partition continues exactly where the
  /// application is; pauses must be applied again by the caller.
  void restart_at(const std::map<std::int32_t, std::int64_t>& offsets);

  /// Asks the broker for the partition's current log start and end.
  watermarks query_watermarks(std::int32_t partition, int timeout_ms = 5000);

  void pause(std::int32_t partition);
  void resume(std::int32_t partition);

  /// Leaves the group (revoking everything) and closes the client, waiting
  /// at most `timeout_ms`: a broker that does not answer must not hold up a
  /// shutdown. Past the limit the group notices the member's absence after
  /// its session timeout instead.
  void close(int timeout_ms = 5000);

  const std::string& topic() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ef::kafka
