#pragma once

#include "persistence/consumer_controls.hpp"

#include <caf/all.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace ef {

/// Why a group member exited on an operator's word (issue 42.5). Neither is
/// a failure: its supervisor starts the member again at once, uncounted, and
/// the new one consumes or waits as the control says.
enum class control_errc : std::uint8_t {
  /// Not a failure: a caf::error whose code is 0 is no error (CAF 0.17).
  none = 0,
  /// The consumer was paused: the member committed what it applied and
  /// left the group.
  paused,
  /// The consumer was resumed: a paused member makes way for one that
  /// joins the group.
  resumed,
};

const char* to_string(control_errc code);

} // namespace ef

CAF_ERROR_CODE_ENUM(ef::control_errc, "ef_control")

namespace ef {

/// Error category of a member's exit on an operator's word.
inline caf::atom_value control_error_category() {
  return caf::detail::error_factory<control_errc>::category;
}

/// True if `reason` is a pause or resume, not a crash.
inline bool is_control_exit(const caf::error& reason) {
  return reason.category() == control_error_category();
}

/// How a member reports itself and learns its consumer's control: the
/// production consumer_controls, or fakes in deterministic tests. Unset
/// functions: never paused, nothing reported.
struct member_control {
  /// Records the member as seen, with its state and partitions; answers
  /// whether its consumer is paused. May throw db_error.
  std::function<bool(const persistence::member_report&)> heartbeat;
  /// The member is gone. May throw db_error.
  std::function<void(const std::string& consumer, const std::string& member)>
    leave;

  /// This process's name for a new member of `consumer` on `node`:
  /// node/pid/n, unique per incarnation.
  static std::string new_member_id(const std::string& node);
};

/// The production control, over `dsn` (one session, opened lazily).
member_control database_member_control(const std::string& dsn);

} // namespace ef
