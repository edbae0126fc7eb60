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
  /// An empty factory: these operations publish nothing themselves (a
  /// command line without a broker); a release is recorded for the DLQ
  /// handler, which publishes it at its next sweep.
  using producer_factory =
    std::function<std::unique_ptr<kafka::record_publisher>(
      const std::string& topic)>;

  /// `faults`: the crash points of the replay's steps (none if null).
  /// `delivery_timeout_ms` bounds each replay's publish; `cluster` without
  /// bootstrap servers: no producer (see producer_factory).
  dlq_operations(std::string dsn, kafka::connection cluster,
                 int delivery_timeout_ms,
                 std::shared_ptr<chaos> faults = nullptr);
  /// The same, on `store` and the producers `producers` makes: the
  /// production ones, or fakes in deterministic actor tests.
  dlq_operations(std::unique_ptr<persistence::dlq_records> store,
                 producer_factory producers,
                 std::shared_ptr<chaos> faults = nullptr);
  ~dlq_operations();

  /// Replays entry `id` (steps 1-3, recorded as `action` by `actor`). Only
  /// the head of its order for its consumer can be replayed: an entry
  /// behind an undecided one is refused, and says which one it waits for.
  outcome replay(std::int64_t id, const std::string& actor,
                 const std::string& action = "replay");

  /// Marks entry `id` discarded (no effect is ever applied for it). If it
  /// was the head of its order, the next parked entry of that order (same
  /// consumer) is released; an entry behind an undecided one changes alone.
  /// A discard publishes nothing itself: the release's publish is done by
  /// the DLQ handler (docs/dlq.md), and the answer says so.
  outcome discard(std::int64_t id, const std::string& actor);

  /// Entry `decided` left its order's undecided entries (a discard, or its
  /// replay was applied): replays the next parked entry of its consumer and
  /// order, if nothing else before that one is undecided. nullopt if
  /// nothing is released. Throws db_error if the database could not say.
  std::optional<outcome> release_after(std::int64_t decided,
                                       const std::string& actor);

  /// Releases, at most `limit` per call, parked events left waiting behind
  /// nothing but discarded ones (a discard whose own release failed after
  /// its commit); returns how many it released. Run by the DLQ handler.
  int release_orphans(int limit = 10);

  /// Finishes replays whose publish is due (never attempted, or left
  /// "replaying" for longer than `grace` by a crash or a failed publish), at
  /// most `limit` per call; returns how many were published and marked.
  int sweep_replays(std::chrono::milliseconds grace, int limit = 10);

  /// Parks again the replays whose publish no broker acknowledged for
  /// `give_up` (a topic that is gone, an ACL that refuses): an operator can
  /// decide on them again. Returns them, with their last errors.
  std::vector<persistence::dlq_entry>
  give_up_replays(std::chrono::milliseconds give_up, int limit = 10);

  /// One entry of a group command and what became of it.
  struct group_step {
    persistence::dlq_entry entry;
    outcome what;
  };

  /// Replays the parked entries of a fingerprint group (its short id or its
  /// fingerprint), each order's in order: the first of an order is
  /// replayed if it is its order's head; the order's later ones follow it
  /// by release (pending); one behind an entry the group does not contain
  /// is refused (decide that one first). `dry_run`: only says so.
  std::vector<group_step> replay_group(const std::string& group,
                                       const std::string& actor, bool dry_run);

  persistence::dlq_records& store() { return *store_; }

private:
  /// Records an audit line; a failure to write it is logged, not thrown.
  void note_action(std::int64_t id, const std::string& action,
                   const std::string& actor, const std::string& what);

  /// What followed a committed discard of `e`, for its answer: nothing (an
  /// undecided entry before it), or the release of the next one.
  std::string after_discard(const persistence::dlq_entry& e,
                            const std::string& actor);

  /// Step 1, and then steps 2 and 3 if this can publish and `how` says so.
  outcome start_replay(std::int64_t id, const std::string& actor,
                       const std::string& action,
                       const persistence::replay_start& how);

  /// Steps 2 and 3 for an entry that is "replaying".
  outcome publish_replay(const persistence::dlq_entry& e,
                         const std::string& actor, const std::string& action);

  std::shared_ptr<chaos> faults_;
  std::unique_ptr<persistence::dlq_records> store_;
  producer_factory make_producer_;
  std::map<std::string, std::unique_ptr<kafka::record_publisher>> producers_;
  kafka::record_publisher& producer_for(const std::string& topic);
};

/// An entry as JSON: what the DLQ desk answers and `eventforge dlq show`
/// prints (dlq_json.cpp).
std::string to_json(const persistence::dlq_entry& e);
/// A fingerprint group as JSON, with its short id.
std::string to_json(const persistence::dlq_group& g);
/// What a group command did, entry by entry.
std::string to_json(const std::vector<dlq_operations::group_step>& steps);

} // namespace ef
