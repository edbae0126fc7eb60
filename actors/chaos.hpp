#pragma once

#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>

#include <caf/error.hpp>
#include <caf/make_message.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
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
  /// A DLQ replay recorded its intent (entry "replaying"), nothing is
  /// published yet.
  dlq_replay_after_mark_before_publish,
  /// The replayed record is acknowledged, the entry not yet "replayed".
  dlq_replay_after_publish_before_mark,
};

constexpr int crash_point_count = 8;

/// "api.after_commit_before_reply", ...
const char* to_string(crash_point p);

/// Why an actor of the tree exited on purpose. Carried as its exit reason
/// in category "ef_chaos" (log_crashes), so supervisors count it apart from
/// real failures and the journal names the point.
enum class chaos_errc : std::uint8_t {
  /// Not a failure: a caf::error whose code is 0 is no error (CAF 0.17).
  none = 0,
  /// An enabled crash point fired; the error's context holds its name.
  injected_crash,
};

const char* to_string(chaos_errc code);

} // namespace ef

CAF_ERROR_CODE_ENUM(ef::chaos_errc, "ef_chaos")

namespace ef {

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

/// What a crash point knows about the event it crashes on, for the recovery
/// journal (order and event ID; the consumer for consumer-side points).
struct crash_site {
  std::string order_id;
  std::string event_id;
  std::string consumer;
};

/// Decides, deterministically, where to crash. The decision for
/// (seed, point, key, n) is a pure function, where n counts the crashes this
/// point already injected for that key. A key therefore crashes a point
/// exactly as often as decide() says yes for n = 0, 1, ... in a row (at most
/// `max_crashes_per_event` times, so every event gets through), however
/// often the point is visited and however events are batched: the same seed
/// injects the same crashes on the same logical events in every run. When no
/// point is enabled or armed, check() is a single relaxed atomic load.
///
/// Besides the seeded decisions, a crash can be armed for one trace: the
/// next visit of that point by an event of that trace (and consumer, if one
/// is named) crashes, once. That is how a demo scenario crashes its own
/// order at the window it shows, on a system running without chaos.
class chaos {
public:
  chaos(const config::settings::chaos_section& cfg,
        std::shared_ptr<telemetry> metrics);

  bool enabled(crash_point p) const {
    return (mask_.load(std::memory_order_relaxed) &
            (1u << static_cast<unsigned>(p))) != 0;
  }

  /// Throws injected_crash if this visit of `p` for `key` must crash.
  void check(crash_point p, const std::string& key,
             const crash_site& site = {}) {
    if (enabled(p))
      evaluate(p, key, site);
  }

  /// Visits `p` for `key` like check(), but reports the decision instead of
  /// throwing: true means a crash was injected (and counted) and the caller
  /// must throw injected_crash(p) itself. For a batch, whose every event
  /// reaches the point at once.
  bool fires(crash_point p, const std::string& key,
             const crash_site& site = {}) {
    return enabled(p) && decide_and_count(p, key, site);
  }

  /// Most crashes armed (and traces poisoned) at once: arm() and poison()
  /// refuse more, so a page that arms and never lets its order through
  /// cannot grow the list without bound.
  static constexpr size_t max_armed = 16;

  /// Arms a one-shot crash at `p` for the events of the W3C trace
  /// `trace_id` (32 hex digits), only in `consumer` if it is not empty.
  /// False (nothing armed) if max_armed crashes are armed already.
  bool arm(crash_point p, const std::string& trace_id,
           const std::string& consumer = "");

  /// Arms like arm(), but the visit that matches asks `claim` first
  /// (outside the lock) and crashes only if it answers true: a crash armed
  /// on several nodes through the database fires on the one node whose
  /// claim of the row succeeds. The armed crash is used up either way.
  bool arm_claimed(crash_point p, const std::string& trace_id,
                   const std::string& consumer, std::function<bool()> claim);

  /// Removes the crashes armed for the trace, but not its poison (another
  /// node fired the crash; the poison lasts until the run is over).
  void drop_crashes(const std::string& trace_id);

  /// Arms a one-shot action instead of a crash: the next visit of `p` by an
  /// event of the trace runs `action` there and goes on (a Kafka fault in
  /// that window: the partition leader moves between publish and ack).
  /// False (nothing armed) if max_armed are armed already.
  bool arm_action(crash_point p, const std::string& trace_id,
                  std::function<void()> action);

  /// Removes every crash armed and every poison set for the trace.
  void disarm(const std::string& trace_id);

  /// True while a crash is armed or a poison set for the trace.
  bool armed_for(const std::string& trace_id) const;

  /// Makes every delivery of the trace's events to `consumer` fail as a
  /// transient error, except a DLQ replay: retried, then parked. False
  /// (nothing set) if max_armed traces are poisoned already.
  bool poison(const std::string& trace_id, const std::string& consumer);

  /// True if the delivery with this consumer-side crash key is poisoned.
  bool poisoned(const std::string& key) const {
    return any_poison_.load(std::memory_order_relaxed) && poisoned_slow(key);
  }

  /// Arms a silent stop of `consumer`'s fetch of `partition`: its group
  /// member pauses the partition in the Kafka client without noting it, as
  /// a client whose fetcher stops without an error would. Once.
  void stall_fetch(const std::string& consumer, std::int32_t partition);
  /// True while an armed fetch stall has not been taken.
  bool fetch_stall_armed() const {
    return any_stall_.load(std::memory_order_relaxed);
  }
  /// True, once, if a stall of this fetch is armed.
  bool take_fetch_stall(const std::string& consumer, std::int32_t partition) {
    return any_stall_.load(std::memory_order_relaxed) &&
           take_fetch_stall_slow(consumer, partition);
  }

  /// Called for every injected crash, before it is thrown (the recovery
  /// journal). Replaces the previous observer.
  void on_crash(std::function<void(crash_point, const crash_site&)> f);

  /// The pure decision function.
  static bool decide(std::uint64_t seed, crash_point p,
                     const std::string& event_id, int attempt, double rate);

  /// Every crash injected so far, as "point key" lines, sorted: two runs with
  /// the same seed and orders produce the same list.
  std::vector<std::string> injected() const;

private:
  void evaluate(crash_point p, const std::string& key, const crash_site& site);
  bool decide_and_count(crash_point p, const std::string& key,
                        const crash_site& site);
  /// True if a crash or action was armed for this visit; an action is
  /// moved to `action`.
  bool take_armed(crash_point p, const std::string& key,
                  std::function<void()>& action, std::function<bool()>& claim);
  /// The configured points plus those still armed (under the lock).
  void update_mask();
  struct armed_crash;
  /// Arms `a` unless max_armed are armed (under the lock).
  bool add_armed(armed_crash a);
  /// Drops every crash armed for `trace_id` (under the lock).
  void drop_armed(const std::string& trace_id);
  bool poisoned_slow(const std::string& key) const;
  bool take_fetch_stall_slow(const std::string& consumer,
                             std::int32_t partition);

  /// The configured points, plus every point with an armed crash.
  std::atomic<unsigned> mask_{0};
  unsigned configured_ = 0;
  std::atomic<bool> any_poison_{false};
  std::atomic<bool> any_stall_{false};
  std::vector<std::pair<std::string, std::int32_t>> stalls_;
  std::function<void(crash_point, const crash_site&)> observer_;
  struct armed_crash {
    crash_point point;
    std::string trace_id;
    std::string consumer;
    std::function<void()> action; ///< set: run it instead of crashing
    std::function<bool()> claim;  ///< set: crash only if it says true
  };
  std::vector<armed_crash> armed_;
  std::vector<std::pair<std::string, std::string>> poisoned_;
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
