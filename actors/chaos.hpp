#pragma once

#include "actors/telemetry.hpp"
#include "config/settings.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace ef {

/// The named failure windows of the brief (section 5).
enum class crash_point : std::uint8_t {
  api_after_commit_before_reply,
  relay_after_publish_before_ack,
  relay_after_ack_before_mark,
  consumer_before_db_commit,
  consumer_after_db_before_offset,
  dlq_after_dlq_ack_before_offset,
};

constexpr int crash_point_count = 6;

/// "api.after_commit_before_reply", ...
const char* to_string(crash_point p);

/// Thrown at an enabled crash point: a real actor failure, handled by the
/// supervisor like any other crash.
class injected_crash : public std::runtime_error {
public:
  explicit injected_crash(crash_point p);
  crash_point point;
};

/// Decides, deterministically, where to crash. The decision for
/// (seed, point, event ID, attempt) is a pure function, so the same seed
/// replays the same crashes for the same events; `attempt` counts how often
/// the point was reached for that event in this process. A point crashes one
/// event at most `max_crashes_per_event` times, so every event gets through.
/// When no point is enabled, check() is a single branch on a constant.
class chaos {
public:
  chaos(const config::settings::chaos_section& cfg,
        std::shared_ptr<telemetry> metrics);

  bool enabled(crash_point p) const {
    return (mask_ & (1u << static_cast<unsigned>(p))) != 0;
  }

  /// Throws injected_crash if this visit of `p` for `event_id` must crash.
  void check(crash_point p, const std::string& event_id) {
    if (enabled(p))
      evaluate(p, event_id);
  }

  /// The pure decision function.
  static bool decide(std::uint64_t seed, crash_point p,
                     const std::string& event_id, int attempt, double rate);

private:
  void evaluate(crash_point p, const std::string& event_id);

  unsigned mask_ = 0;
  double rate_ = 0;
  std::uint64_t seed_ = 0;
  int max_crashes_ = 0;
  std::shared_ptr<telemetry> metrics_;
  std::mutex mtx_;
  struct visits {
    int attempts = 0;
    int crashes = 0;
  };
  std::map<std::pair<int, std::string>, visits> visits_;
};

} // namespace ef
