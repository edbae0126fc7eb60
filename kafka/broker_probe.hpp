#pragma once

#include "kafka/connection.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ef::kafka {

/// What the repairer asks the broker about a topic's logs: broker_probe, or
/// a fake in deterministic actor tests. Throws std::runtime_error when the
/// broker does not answer.
class log_probe {
public:
  struct watermarks {
    std::int64_t low = 0;  ///< first offset still in the log
    std::int64_t high = 0; ///< next offset to be written
  };
  virtual ~log_probe() = default;
  virtual watermarks query_watermarks(std::int32_t partition,
                                      int timeout_ms = 5000) = 0;
  /// The event_id header of the record at (partition, offset); nullopt if
  /// the broker does not hold that offset (trimmed, or past the end).
  virtual std::optional<std::string> event_id_at(std::int32_t partition,
                                                 std::int64_t offset,
                                                 int timeout_ms = 5000) = 0;
};

/// Read-only questions to the broker about one topic, over long-lived client
/// handles (cheap to ask every few hundred milliseconds). Not thread-safe:
/// one owner actor asks everything. Throws std::runtime_error when the broker
/// does not answer.
class broker_probe : public log_probe {
public:
  broker_probe(const connection& cluster, const std::string& topic);
  ~broker_probe() override;

  watermarks query_watermarks(std::int32_t partition,
                              int timeout_ms = 5000) override;

  /// `group`'s committed next offset for partitions 0..n-1 (-1: none).
  std::vector<std::int64_t> committed(const std::string& group, int partitions,
                                      int timeout_ms = 5000);

  /// The event_id header of the record at (partition, offset); nullopt if
  /// the broker does not hold that offset (trimmed, or past the end).
  std::optional<std::string> event_id_at(std::int32_t partition,
                                         std::int64_t offset,
                                         int timeout_ms = 5000) override;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ef::kafka
