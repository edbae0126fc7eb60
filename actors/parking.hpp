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

  /// The earliest parked entry of this consumer's order that comes before
  /// entry `entry_id`, if any: a replay of that entry waits behind it (an
  /// operator never starts such a replay; this keeps the order whatever
  /// started it).
  virtual std::optional<head> waits_behind(std::int64_t entry_id) = 0;

  /// What park() did.
  enum class parked {
    stored,     ///< on the DLQ topic and in dlq_events: the offset may move
    not_stored, ///< the DLQ or the database failed: try the record again
    decided,    ///< its entry was decided (discarded, replayed) or is being
                ///< replayed: this delivery is a duplicate, nothing parked
  };

  /// Produces `rec` (with every header) to the DLQ topic and, once that is
  /// acknowledged, stores its entry. `replay_of`: the entry `rec` replays
  /// (0 if none): a failed replay parks that entry again. A delivery of an
  /// entry that is decided parks nothing: a decision stands, whatever
  /// arrives again.
  virtual parked park(const partition_record& rec, const order_event* ev,
                      const failure& why, int attempts,
                      const std::string& first_failure_at,
                      std::int64_t replay_of) = 0;

  /// This consumer applied its replay of entry `entry_id`: replays the
  /// next parked event of the entry's order, so its events follow in
  /// their original order. False if none.
  virtual bool release_after(std::int64_t entry_id) = 0;
};

/// The production parking of `consumer`'s partition `partition`.
std::unique_ptr<parking> dlq_parking(context_ptr ctx, std::string consumer,
                                     std::int32_t partition,
                                     const partition_faults& faults);

} // namespace ef
