#pragma once

#include "kafka/connection.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace ef::kafka {

/// A topic's retention as the broker states it (-1: unlimited).
struct retention {
  std::int64_t bytes = -1; ///< retention.bytes, per partition
  std::int64_t ms = -1;    ///< retention.ms
};

/// Asks the broker for `topic`'s retention.bytes and retention.ms
/// (DescribeConfigs). nullopt, with the broker's reason in `why`, when it
/// does not answer it (no such API, no permission, no broker) or when
/// `stop` is set meanwhile (looked at every 100 ms).
std::optional<retention> describe_retention(const connection& cluster,
                                            const std::string& topic,
                                            int timeout_ms, std::string& why,
                                            const std::atomic<bool>& stop);

/// How many bytes a partition may hold beyond the slowest consumer before
/// the relays wait (relay.max-lead-bytes): what an operator set, or derived
/// from what the log can hold, so that on a cluster with days of retention
/// one stuck consumer no longer stops the others after 2 MiB, and on a
/// small log nothing unread is trimmed.
///
/// Derived: 80 % of retention.bytes (the rest absorbs batches in flight and
/// the relays' estimate of record sizes); no limit when retention.bytes is
/// unlimited (a consumer stuck past retention.ms is repaired through its
/// gap). The retention comes from the broker (DescribeConfigs), else from
/// what the cluster declared (`declared_bytes`, the in-process broker's log
/// size), else the limit is `fallback`, which also holds until the first
/// answer. The broker is asked by a thread of watch()'s, never by a relay:
/// a broker that does not answer (the in-process one waits for a
/// controller it does not have) must not stall publishing. Each choice is
/// logged once, when it changes. Thread-safe.
class lead_limit {
public:
  /// What lead_limit asks the broker (a test's fake, or describe_retention).
  /// It gives up when its `stop` is set (the limit is going away).
  using ask_fn = std::function<std::optional<retention>(
    std::string& why, const std::atomic<bool>& stop)>;

  /// `configured`: relay.max-lead-bytes (>= 0 wins and nothing is asked;
  /// -1 derives).
  lead_limit(std::int64_t configured, ask_fn ask, std::int64_t declared_bytes,
             std::int64_t fallback);
  ~lead_limit();
  lead_limit(const lead_limit&) = delete;
  lead_limit& operator=(const lead_limit&) = delete;

  /// The limit in bytes now; 0: no limit. Never blocks on the broker.
  std::int64_t bytes() const;

  /// Why the limit is what it is, for the log and the status screen.
  std::string reason() const;

  /// Asks the broker once and decides.
  void refresh();

  /// Refreshes now and then every `every` (ten times that while the broker
  /// does not describe the topic) in a thread of its own, until destroyed.
  /// Nothing when the limit is configured.
  void watch(std::chrono::milliseconds every = std::chrono::seconds(60));

  /// The limit derived from a retention.bytes.
  static std::int64_t from_retention(std::int64_t retention_bytes);

private:
  void decide(std::int64_t value, std::string why);

  std::int64_t configured_;
  ask_fn ask_;
  std::int64_t declared_;
  std::int64_t fallback_;
  mutable std::mutex mtx_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};
  bool described_ = false; ///< the last ask got an answer
  std::thread watcher_;
  std::int64_t value_ = 0;
  std::string reason_;
};

} // namespace ef::kafka
