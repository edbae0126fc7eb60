#pragma once

#include "actors/context.hpp"
#include "actors/delivery.hpp"
#include "actors/partition_faults.hpp"
#include "messages/tree_messages.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace ef {

/// How a partition actor meets the dead-letter queue (docs/dlq.md): the
/// decisions it asks for and the parking it does. The production one
/// (dlq_parking) reads and writes dlq_events and produces to the DLQ topic;
/// deterministic actor tests give a fake. Every call may throw db_error:
/// the actor treats that as a failed attempt, never a crash.
class parking {
public:
  /// The parked event an order's later events must wait behind.
  struct head {
    std::string event_id;
    std::int64_t entry_id = 0;
  };

  virtual ~parking() = default;

  /// Whether a DLQ replay record carrying `dlq.replay_of: entry_id` is for
  /// this consumer: the entry is this consumer's own and is replaying or
  /// replayed. A replay reaches every consumer of the topic; any other one
  /// (another consumer's entry, one this consumer parked anew, one gone)
  /// is skipped, whatever this consumer's marks say or retention deleted.
  virtual bool replay_is_ours(std::int64_t entry_id) = 0;

  /// The oldest parked event of the order, if any.
  virtual std::optional<head> parked_head(const std::string& order_id) = 0;

  /// Produces `rec` (with every header) to the DLQ topic and, once that is
  /// acknowledged, stores its entry; false if either did not happen (the
  /// record is tried again; a copy on the topic is harmless).
  virtual bool park(const partition_record& rec, const order_event* ev,
                    const failure& why, int attempts,
                    const std::string& first_failure_at) = 0;

  /// A replay for this consumer went through: replays the next parked
  /// event of the order, so its events follow in their original order.
  /// False if none.
  virtual bool release_next(const std::string& order_id) = 0;
};

/// The production parking of `consumer`'s partition `partition`.
std::unique_ptr<parking> dlq_parking(context_ptr ctx, std::string consumer,
                                     std::int32_t partition,
                                     const partition_faults& faults);

} // namespace ef
