#pragma once

#include <array>

namespace ef::config {

/// The names of the failure windows of the brief (section 5), in the order
/// of ef::crash_point (actors/chaos.hpp): the one list the option table's
/// default, the chaos switchboard and `eventforge chaos` read.
inline constexpr std::array<const char*, 8> crash_point_names = {
  "api.after_commit_before_reply",
  "relay.after_publish_before_ack",
  "relay.after_ack_before_mark",
  "consumer.before_db_commit",
  "consumer.after_db_before_offset",
  "dlq.after_dlq_ack_before_offset",
  "dlq.replay_after_mark_before_publish",
  "dlq.replay_after_publish_before_mark",
};

} // namespace ef::config
