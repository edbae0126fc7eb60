#pragma once

#include <chrono>
#include <deque>

namespace ef {

/// Restart intensity: at most `max_restarts` within `window`. A supervisor
/// asks before each restart; `false` means escalate (fail the supervisor).
class restart_policy {
public:
  /// The actor clock's time (caf::actor_clock::time_point).
  using clock = std::chrono::steady_clock;

  restart_policy(int max_restarts, std::chrono::seconds window)
      : max_(max_restarts), window_(window) {
    // nop
  }

  /// Records a restart at `now` (the supervising actor's clock); returns
  /// false if that exceeds the intensity.
  bool allow(clock::time_point now) {
    while (!recent_.empty() && now - recent_.front() > window_)
      recent_.pop_front();
    recent_.push_back(now);
    return static_cast<int>(recent_.size()) <= max_;
  }

private:
  int max_;
  std::chrono::seconds window_;
  std::deque<clock::time_point> recent_;
};

} // namespace ef
