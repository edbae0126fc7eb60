#pragma once

#include "kafka/connection.hpp"

#include "actors/chaos.hpp"
#include "kafka/outbox_producer.hpp"
#include "persistence/dlq_store.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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
  /// What an action did: what its answer must say.
  enum class result {
    done,        ///< did what was asked
    pending,     ///< the intent is durable; the DLQ handler finishes it
    refused,     ///< changed nothing: the entry's state does not allow it
    unavailable, ///< changed nothing: the database could not be reached
    unknown,     ///< the connection broke during the commit of a change
  };

  struct outcome {
    outcome(result r, std::string text, std::string left_as = {})
        : what(r), message(std::move(text)), status(std::move(left_as)) {
      // nop
    }
    result what;
    std::string message;
    /// The entry's status as this action left it ("" when unchanged or
    /// unknown): an answer says it without reading it back.
    std::string status;
    bool ok() const { return what == result::done; }
  };

  /// A producer for replays to `topic`, made at the first replay there.
  using producer_factory =
    std::function<std::unique_ptr<kafka::record_publisher>(
      const std::string& topic)>;

  /// `faults`: the crash points of the replay's steps (none if null).
  dlq_operations(std::string dsn, kafka::connection cluster,
                 int delivery_timeout_ms,
                 std::shared_ptr<chaos> faults = nullptr);
  /// The same, on `store` and the producers `producers` makes: the
  /// production ones, or fakes in deterministic actor tests.
  dlq_operations(std::unique_ptr<persistence::dlq_records> store,
                 producer_factory producers,
                 std::shared_ptr<chaos> faults = nullptr);
  ~dlq_operations();

  /// Replays entry `id` (steps 1-3, recorded as `action` by `actor`).
  outcome replay(std::int64_t id, const std::string& actor,
                 const std::string& action = "replay");

  /// Marks parked entry `id` discarded (no effect is ever applied for it),
  /// then releases the next parked event of the same order, if any:
  /// discarding the head of an order means "skip it", not "stall the order".
  outcome discard(std::int64_t id, const std::string& actor);

  /// Replays the oldest parked entry of (consumer, order_key): that
  /// replay's outcome, or nullopt if none is parked. Throws db_error if
  /// the database could not say which one that is.
  std::optional<outcome> release_next(const std::string& consumer,
                                      const std::string& order_key,
                                      const std::string& actor);

  /// Releases, at most `limit` per call, parked events left waiting behind
  /// nothing but discarded ones (a discard whose own release failed after
  /// its commit); returns how many it released. Run by the DLQ handler.
  int release_orphans(int limit = 10);

  /// Finishes replays left "replaying" for longer than `grace` (a crash or
  /// a failed publish between the steps), at most `limit` per call; returns
  /// how many were published and marked.
  int sweep_replays(std::chrono::milliseconds grace, int limit = 10);

  persistence::dlq_records& store() { return *store_; }

private:
  /// Records an audit line; a failure to write it is logged, not thrown.
  void note_action(std::int64_t id, const std::string& action,
                   const std::string& actor, const std::string& what);

  /// Steps 2 and 3 for an entry that is "replaying".
  outcome publish_replay(const persistence::dlq_entry& e,
                         const std::string& actor, const std::string& action);

  std::shared_ptr<chaos> faults_;
  std::unique_ptr<persistence::dlq_records> store_;
  producer_factory make_producer_;
  std::map<std::string, std::unique_ptr<kafka::record_publisher>> producers_;
  kafka::record_publisher& producer_for(const std::string& topic);
};

/// An entry as JSON: what the handler answers and `eventforge dlq show`
/// prints (dlq_handler.cpp).
std::string to_json(const persistence::dlq_entry& e);

} // namespace ef
