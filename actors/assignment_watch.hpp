#pragma once

#include <eventforge/config/logging.hpp>

#include <chrono>
#include <string>

namespace ef {

/// Warns once if no partition was assigned within three session timeouts
/// of subscribing: expected for a member beyond the topic's partition
/// count, otherwise a group join that is stuck, which this makes visible in
/// a log kept at warn.
class assignment_watch {
public:
  /// The actor clock's time (caf::actor_clock::time_point).
  using clock = std::chrono::steady_clock;

  /// Subscribed at `now`, the member's clock.
  assignment_watch(std::string consumer, std::string topic,
                   std::chrono::milliseconds session_timeout,
                   clock::time_point now)
      : consumer_(std::move(consumer)), topic_(std::move(topic)),
        limit_(3 * session_timeout), subscribed_at_(now) {}

  /// Partitions were assigned (none: a rebalance that gave this member none).
  void assigned(bool any) { watching_ = watching_ && !any; }

  void check(clock::time_point now) {
    if (!watching_ || now - subscribed_at_ < limit_)
      return;
    watching_ = false;
    ef::log::warn("{}: no partition assigned {} ms after subscribing to {}: "
                  "expected if the group has more members than the topic has "
                  "partitions, otherwise the group join is stuck",
                  consumer_, limit_.count(), topic_);
  }

private:
  std::string consumer_;
  std::string topic_;
  std::chrono::milliseconds limit_;
  clock::time_point subscribed_at_;
  bool watching_ = true;
};

} // namespace ef
