#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ef::persistence {

class session;

/// A consumer member as it reports itself: which node, whether it consumes
/// or waits paused, and the partitions it owns.
struct member_report {
  std::string consumer;
  std::string member; ///< unique per member incarnation: node/pid/n
  std::string node;
  bool paused = false;
  std::vector<std::int32_t> partitions;
};

/// A member as the table holds it, with how long ago it was last seen.
struct member_row {
  std::string member;
  std::string node;
  std::string state; ///< consuming, paused
  std::vector<std::int32_t> partitions;
  double seen_seconds_ago = 0;
};

/// One consumer's control: paused or not, since when, by whom.
struct control_row {
  std::string consumer;
  bool paused = false;
  std::string changed_at; ///< RFC 3339
  std::string changed_by;
};

/// Operators' controls of the consumers (pause, resume; the reset's log)
/// and the members' own reports (issue 42.5), in consumer_controls,
/// consumer_members and consumer_control_log. Every call may throw
/// db_error. Not thread-safe: one per user.
class consumer_controls {
public:
  explicit consumer_controls(std::string dsn);
  ~consumer_controls();

  /// A member's heartbeat: records it as seen now, with its state and
  /// partitions, and answers whether its consumer is paused. One round trip.
  bool heartbeat(const member_report& me);
  /// The member is gone (stopped, or paused and waiting elsewhere).
  void leave(const std::string& consumer, const std::string& member);

  /// Pauses or resumes `consumer` for every node and logs who did it.
  /// Returns false if it already was so (nothing changed, nothing logged).
  bool set_paused(const std::string& consumer, bool paused,
                  const std::string& actor);
  /// Every consumer that has a control row.
  std::vector<control_row> controls();
  /// The members of `consumer` seen within `max_age_seconds`.
  std::vector<member_row> members(const std::string& consumer,
                                  double max_age_seconds);
  /// Appends to the log of operators' actions.
  void log(const std::string& consumer, const std::string& action,
           const std::string& detail, const std::string& actor);

private:
  std::unique_ptr<session> db_;
};

} // namespace ef::persistence
