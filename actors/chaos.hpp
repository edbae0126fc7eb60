#pragma once

#include "actors/telemetry.hpp"
#include "config/settings.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

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

/// The key crash decisions are made for: the logical identity of an event,
/// so that the same seed crashes on the same orders in every run. That is the
/// W3C trace ID the client sent (the chaos runner sends one derived from the
/// seed and the order's number) plus the event type; without a trace, the
/// event ID (random per run).
std::string chaos_key(const std::string& traceparent,
                      const std::string& event_type,
                      const std::string& event_id);

/// Decides, deterministically, where to crash. The decision for
/// (seed, point, key, n) is a pure function, where n counts the crashes this
/// point already injected for that key. A key therefore crashes a point
/// exactly as often as decide() says yes for n = 0, 1, ... in a row (at most
/// `max_crashes_per_event` times, so every event gets through), however
/// often the point is visited and however events are batched: the same seed
/// injects the same crashes on the same logical events in every run. When no
/// point is enabled, check() is a single branch on a constant.
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

  /// Visits `p` for `event_id` like check(), but reports the decision
  /// instead of throwing: true means a crash was injected (and counted) and
  /// the caller must throw injected_crash(p) itself. For a batch, whose
  /// every event reaches the point at once.
  bool fires(crash_point p, const std::string& event_id) {
    return enabled(p) && decide_and_count(p, event_id);
  }

  /// The pure decision function.
  static bool decide(std::uint64_t seed, crash_point p,
                     const std::string& event_id, int attempt, double rate);

  /// Every crash injected so far, as "point key" lines, sorted: two runs with
  /// the same seed and orders produce the same list.
  std::vector<std::string> injected() const;

private:
  void evaluate(crash_point p, const std::string& event_id);
  bool decide_and_count(crash_point p, const std::string& event_id);

  unsigned mask_ = 0;
  double rate_ = 0;
  std::uint64_t seed_ = 0;
  int max_crashes_ = 0;
  std::shared_ptr<telemetry> metrics_;
  mutable std::mutex mtx_;
  struct visits {
    int attempts = 0;
    int crashes = 0;
  };
  std::map<std::pair<int, std::string>, visits> visits_;
};

} // namespace ef
