#pragma once

#include "kafka/outbox_producer.hpp"
#include "persistence/dlq_store.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ef {

/// Operator actions on DLQ entries. Replay republishes the ORIGINAL record
/// (same key, same value, same event ID) to the source topic, so every
/// consumer sees it again and the idempotency guard decides: the consumer
/// that parked it applies it, the others suppress it as a duplicate.
/// Used by `eventforge dlq`, the admin HTTP endpoints and partition actors.
class dlq_operations {
public:
  struct outcome {
    bool ok = false;
    std::string message;
  };

  dlq_operations(std::string dsn, std::string brokers, int delivery_timeout_ms);
  ~dlq_operations();

  /// Republishes entry `id`; records the action (by `actor`) and marks the
  /// entry replayed once the broker acknowledged it.
  outcome replay(std::int64_t id, const std::string& actor,
                 const std::string& action = "replay");

  /// Marks entry `id` discarded (no effect is ever applied for it), then
  /// releases the next parked event of the same order, if any: discarding
  /// the head of an order means "skip it", not "stall the order".
  outcome discard(std::int64_t id, const std::string& actor);

  /// Replays the oldest parked entry of (consumer, order_key), if any.
  /// Returns false if there was none.
  bool release_next(const std::string& consumer, const std::string& order_key,
                    const std::string& actor);

  persistence::dlq_store& store() { return *store_; }

private:
  std::string brokers_;
  int delivery_timeout_ms_;
  std::unique_ptr<persistence::dlq_store> store_;
  std::map<std::string, std::unique_ptr<kafka::outbox_producer>> producers_;
  kafka::outbox_producer& producer_for(const std::string& topic);
};

} // namespace ef
