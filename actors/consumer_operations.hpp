#pragma once

#include "kafka/connection.hpp"
#include "persistence/consumer_controls.hpp"
#include <eventforge/config/settings.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ef {

/// Where a reset moves a consumer's committed offsets.
struct reset_target {
  enum class kind { earliest, offset, time };
  kind what = kind::earliest;
  std::int32_t partition = -1; ///< offset: the one partition it names
  std::int64_t offset = 0;     ///< offset: the next offset to read
  std::int64_t unix_ms = 0;    ///< time: the first record at or after it
};

/// What a reset would do, per partition, and whether it may.
struct reset_plan {
  struct partition {
    std::int32_t id = 0;
    std::int64_t committed = -1; ///< now (-1: nothing committed)
    std::int64_t target = 0;
  };
  std::string consumer;
  std::vector<partition> partitions; ///< only those that move
  /// Records read again: from the target up to what was committed.
  std::int64_t reread = 0;
  /// Why it may not run now ("" if it may).
  std::string refused;
};

/// What an operator does to a consumer (issue 42.5), for `eventforge
/// consumer` and /admin/consumers: pause and resume (durable, obeyed by
/// every node's member within a second: it applies what is in flight,
/// commits, leaves the group and waits), and the reset of a paused
/// consumer's offsets. Re-reading is safe by design: what was applied is
/// suppressed by the idempotency guard. Not thread-safe; may throw
/// db_error, and std::runtime_error for the broker.
class consumer_operations {
public:
  consumer_operations(config::settings cfg, std::string dsn,
                      kafka::connection cluster);

  /// Whether `name` is one of the configured consumers; else why not.
  std::string check_name(const std::string& name) const;
  /// Every configured consumer: paused or not (by whom, since when) and its
  /// members seen lately (node, state, partitions).
  nlohmann::json overview();
  /// Pauses or resumes `name`; the answer says what changed.
  std::string set_paused(const std::string& name, bool paused,
                         const std::string& actor);
  /// The reset's plan: refused unless the consumer is paused and no member
  /// of it still consumes.
  reset_plan plan_reset(const std::string& name, const reset_target& to);
  /// Commits the plan's offsets for the group and logs who did it.
  void apply_reset(const reset_plan& plan, const std::string& actor);

  /// How recently a member must have reported itself to count as present.
  static constexpr double member_window_s = 5.0;

private:
  config::settings cfg_;
  kafka::connection cluster_;
  persistence::consumer_controls db_;
};

} // namespace ef
