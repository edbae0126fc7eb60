#pragma once

#include "messages/events.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ef::kafka {

/// A member of a Kafka consumer group on one topic, with auto-commit and
/// auto offset store OFF: offsets move only through commit(). Partition
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
  /// dropped, so the next poll starts exactly at `offset`.
  void seek(std::int32_t partition, std::int64_t offset);

  void pause(std::int32_t partition);
  void resume(std::int32_t partition);

  /// Leaves the group (revoking everything) and closes the client.
  void close();

  const std::string& topic() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ef::kafka
