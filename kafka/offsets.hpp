#pragma once

#include "kafka/connection.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ef::kafka {

/// Read-only views of the broker's state, used by tests, the verifier and
/// operators. Index i of each vector is partition i.

/// Reads log ends and committed offsets over clients it keeps open for its
/// lifetime (one for log ends, one per group asked). Keep one for a set of
/// reads, not across a broker outage: a client whose broker went away may
/// block in query_watermark_offsets past its timeout (librdkafka 2.0.2).
/// Not thread-safe.
class offset_reader {
public:
  explicit offset_reader(connection cluster);
  ~offset_reader();
  offset_reader(const offset_reader&) = delete;
  offset_reader& operator=(const offset_reader&) = delete;

  /// Log end offset (high watermark) of every partition of `topic`.
  std::vector<std::int64_t> log_ends(const std::string& topic, int partitions,
                                     int timeout_ms = 10000);

  /// Committed next offset of `group` for every partition (-1: none).
  std::vector<std::int64_t> committed(const std::string& group,
                                      const std::string& topic, int partitions,
                                      int timeout_ms = 10000);

private:
  struct clients;
  connection cluster_;
  std::unique_ptr<clients> clients_;
};

/// One-off reads (a client for the call): log end offset (high watermark)
/// of every partition of `topic`.
std::vector<std::int64_t> log_end_offsets(const connection& cluster,
                                          const std::string& topic,
                                          int partitions,
                                          int timeout_ms = 10000);

/// Committed next offset of `group` for every partition (-1: none).
std::vector<std::int64_t> committed_offsets(const connection& cluster,
                                            const std::string& group,
                                            const std::string& topic,
                                            int partitions,
                                            int timeout_ms = 10000);

/// Log start offset (low watermark) of every partition of `topic`: the
/// oldest record the broker still holds.
std::vector<std::int64_t> log_start_offsets(const connection& cluster,
                                            const std::string& topic,
                                            int partitions,
                                            int timeout_ms = 10000);

/// Per partition of `topic`, the offset of its first record stamped at or
/// after `unix_ms` (the log end where there is none).
std::vector<std::int64_t> offsets_for_time(const connection& cluster,
                                           const std::string& topic,
                                           int partitions, std::int64_t unix_ms,
                                           int timeout_ms = 10000);

/// Sets `group`'s committed offsets (partition -> next offset), as an
/// operator's offset reset would, by briefly joining the group. Meant for a
/// stopped consumer: a running member may commit over it.
void commit_offsets(const connection& cluster, const std::string& group,
                    const std::string& topic,
                    const std::vector<std::pair<int, std::int64_t>>& offsets);

/// Every record of `topic`, read from the beginning up to the current log
/// end: (partition, offset, key, value, event_id header).
struct stored_record {
  std::int32_t partition;
  std::int64_t offset;
  std::string key;
  std::string value;
  std::string event_id;
  std::vector<std::pair<std::string, std::string>> headers;
};
std::vector<stored_record> read_all(const connection& cluster,
                                    const std::string& topic, int partitions);

} // namespace ef::kafka
