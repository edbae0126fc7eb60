#pragma once

#include "actors/chaos.hpp"
#include "kafka/outbox_producer.hpp"
#include "persistence/dlq_store.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ef {

/// Operator actions on DLQ entries. Replay republishes the ORIGINAL record
/// (same key, same value, same event ID, its traceparent) to the source
/// topic, so every consumer sees it again and decides by its own entry: the
/// consumer that parked it applies it, the others suppress it as a
/// duplicate. Used by `eventforge dlq`, the admin HTTP endpoints, the DLQ
/// handler and partition actors.
///
/// A replay survives a crash at every step:
///   1. the entry becomes "replaying" (durable intent; consumers that meet
///      the record from now on apply it),
///   2. the record is published and acknowledged,
///   3. the entry becomes "replayed".
/// A crash or a failed publish leaves it "replaying"; sweep_replays() (run
/// by the DLQ handler) publishes it again and finishes step 3. Publishing
/// twice is harmless: the second copy is a suppressed duplicate.
class dlq_operations {
public:
  struct outcome {
    bool ok = false;
    std::string message;
    /// Not done, but not refused either: the replay's intent is recorded
    /// and its publish failed; the sweep publishes it again.
    bool pending = false;
  };

  /// `faults`: the crash points of the replay's steps (none if null).
  dlq_operations(std::string dsn, std::string brokers, int delivery_timeout_ms,
                 std::shared_ptr<chaos> faults = nullptr);
  ~dlq_operations();

  /// Replays entry `id` (steps 1-3, recorded as `action` by `actor`).
  outcome replay(std::int64_t id, const std::string& actor,
                 const std::string& action = "replay");

  /// Marks parked entry `id` discarded (no effect is ever applied for it),
  /// then releases the next parked event of the same order, if any:
  /// discarding the head of an order means "skip it", not "stall the order".
  outcome discard(std::int64_t id, const std::string& actor);

  /// Replays the oldest parked entry of (consumer, order_key), if any.
  /// Returns false if there was none.
  bool release_next(const std::string& consumer, const std::string& order_key,
                    const std::string& actor);

  /// Finishes replays left "replaying" for longer than `grace` (a crash or
  /// a failed publish between the steps), at most `limit` per call; returns
  /// how many were published and marked.
  int sweep_replays(std::chrono::milliseconds grace, int limit = 10);

  persistence::dlq_store& store() { return *store_; }

private:
  /// Steps 2 and 3 for an entry that is "replaying".
  outcome publish_replay(const persistence::dlq_entry& e,
                         const std::string& actor, const std::string& action);

  std::string brokers_;
  int delivery_timeout_ms_;
  std::shared_ptr<chaos> faults_;
  std::unique_ptr<persistence::dlq_store> store_;
  std::map<std::string, std::unique_ptr<kafka::outbox_producer>> producers_;
  kafka::outbox_producer& producer_for(const std::string& topic);
};

} // namespace ef
