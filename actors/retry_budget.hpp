#pragma once

#include "actors/delivery.hpp"
#include "config/backoff.hpp"
#include <eventforge/config/settings.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace ef {

/// The retry rules of the record at the front of a partition: a transient
/// failure is retried after config::backoff (consumer.backoff-*), up to
/// consumer.max-attempts attempts; a permanent failure, or the last
/// attempt, parks it; a database outage is retried for as long as it lasts
/// and spends no attempt (it is not the record's fault, and parking would
/// need the same database).
class retry_budget {
public:
  retry_budget(const config::settings& cfg, std::string who);

  /// What to do after a failed attempt.
  struct verdict {
    bool park = false;                 ///< else retry after `wait`
    std::chrono::milliseconds wait{0}; ///< before the next attempt
  };
  /// `now`: the partition actor's clock (caf::actor_clock).
  verdict failed(const failure& why, std::int64_t offset,
                 config::backoff::clock::time_point now);

  /// The front record is through: the next one starts afresh.
  void succeeded(std::int64_t offset);

  /// Attempts spent on the front record (for its DLQ entry).
  int attempts() const { return attempts_; }
  /// When its first attempt failed (RFC 3339), "" if none did.
  const std::string& first_failure_at() const { return first_failure_at_; }

private:
  std::string who_; ///< "billing p3", for the log
  int max_attempts_;
  config::backoff wait_;
  int attempts_ = 0;
  bool in_outage_ = false;
  std::string first_failure_at_;
};

} // namespace ef
