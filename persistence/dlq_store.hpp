#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ef::persistence {

class session;

/// One dead-lettered delivery: the original record plus why and when it
/// failed. `key` and `value` hold the original bytes, which a foreign
/// producer may have made anything; every text field is printable.
struct dlq_entry {
  std::int64_t id = 0;
  std::string consumer;
  std::string event_id;  ///< event UUID, or "offset:<p>:<o>" if undecodable
  std::string order_key; ///< the key as text (ef::printable of `key`)
  std::string key;       ///< the record's key, byte for byte
  std::string value;
  std::string traceparent; ///< the record's, "" if it had none
  std::string event_type;
  std::string error_class;
  std::string error_message;
  std::string fingerprint;
  int attempts = 0;
  std::string source_topic;
  int source_partition = 0;
  std::int64_t source_offset = 0;
  std::string first_failure_at; ///< RFC 3339
  std::string last_failure_at;
  std::string parked_at;
  std::string status; ///< parked, replaying, replayed, discarded
  double age_seconds = 0;
};

/// A group of parked entries with the same failure fingerprint.
struct dlq_group {
  std::string fingerprint;
  std::string error_class;
  std::string example_message;
  long count = 0;
  double oldest_age_seconds = 0;
};

/// What a discard did.
enum class discard_result {
  discarded,      ///< the entry is discarded and its consumer's mark says so
  not_parked,     ///< no such entry, or it is not parked: nothing changed
  already_applied ///< its consumer applied the event meanwhile: nothing
                  ///< changed
};

/// The DLQ's durable state as the DLQ handler, its operations and the
/// partition actors use it: the production dlq_store, or a fake in
/// deterministic actor tests. Every call may throw db_error.
class dlq_records {
public:
  virtual ~dlq_records() = default;

  /// Records a parked delivery. Idempotent per (consumer, event_id): a second
  /// parking of the same delivery changes nothing; parking an entry that was
  /// replayed (and failed again) makes it parked again. Returns its id.
  /// `repark` is for the consumer that just failed the event again; the DLQ
  /// topic's reader passes false, so a late copy never undoes a replay, and
  /// never stores an entry for an event its consumer has applied since
  /// (then it returns 0).
  virtual std::int64_t park(const dlq_entry& e, bool repark) = 0;

  /// Order keys with parked entries of `consumer`.
  virtual std::set<std::string> parked_orders(const std::string& consumer) = 0;

  /// The oldest parked entry of (consumer, order_key), if any.
  virtual std::optional<dlq_entry> head_of(const std::string& consumer,
                                           const std::string& order_key) = 0;

  /// The entry's status for (consumer, event_id), if it has one.
  virtual std::optional<std::string> status_of(const std::string& consumer,
                                               const std::string& event_id) = 0;

  virtual std::optional<dlq_entry> get(std::int64_t id) = 0;
  /// Entries with `status` ("" = any), newest first.
  virtual std::vector<dlq_entry> list(const std::string& status, int limit) = 0;
  /// Parked entries grouped by fingerprint, largest group first.
  virtual std::vector<dlq_group> groups() = 0;
  /// Parked entries of one fingerprint group, oldest first.
  virtual std::vector<dlq_entry> in_group(const std::string& fingerprint) = 0;

  /// Step 1 of a replay: records the intent durably (status replaying,
  /// replay_started_at now) before anything is published. Only a parked
  /// entry can start a replay; returns the entry as it now is, or nullopt
  /// (`status_if_refused` then says why: the entry's status, "" for none).
  virtual std::optional<dlq_entry>
  begin_replay(std::int64_t id, std::string& status_if_refused) = 0;

  /// The consumer and status of entry `id`, if it exists: whom a replay
  /// record carrying `dlq.replay_of: id` is for.
  virtual std::optional<std::pair<std::string, std::string>>
  replay_target(std::int64_t id) = 0;

  /// Step 3, after the broker acknowledged the republished record: marks a
  /// replaying entry replayed and records the action, in one transaction.
  /// An entry that is no longer replaying (its consumer failed the replay
  /// again and parked it anew) keeps its status; the action is recorded.
  /// `partition` and `offset` are where the replayed record landed.
  virtual void finish_replay(std::int64_t id, std::int32_t partition,
                             std::int64_t offset, const std::string& action,
                             const std::string& actor,
                             const std::string& outcome) = 0;

  /// Records an action without changing the entry (a failed publish).
  virtual void record_action(std::int64_t id, const std::string& action,
                             const std::string& actor,
                             const std::string& outcome) = 0;

  /// Claims at most `limit` entries left replaying for longer than `grace`
  /// (a crash or a failed publish between the steps): their clock restarts,
  /// so no other sweeper takes them within `grace`. Returns them.
  virtual std::vector<dlq_entry>
  claim_stale_replays(std::chrono::milliseconds grace, int limit) = 0;

  /// Marks a PARKED entry discarded, writes its consumer's "discarded"
  /// mark (for an event with a UUID) and records the action, in one
  /// transaction; changes nothing unless it returns `discarded` (a replay
  /// in progress is never discarded, nor an event its consumer applied).
  virtual discard_result discard(std::int64_t id, const std::string& actor) = 0;

  /// At most `limit` parked entries that wait behind earlier entries of
  /// their order which are all discarded: a discard's release that did not
  /// happen. Oldest first.
  virtual std::vector<std::int64_t> orphaned_heads(int limit) = 0;
};

/// The DLQ's durable state (dlq_events, dlq_actions). Throws db_error.
class dlq_store : public dlq_records {
public:
  explicit dlq_store(std::string dsn);
  ~dlq_store() override;

  std::int64_t park(const dlq_entry& e, bool repark) override;
  std::set<std::string> parked_orders(const std::string& consumer) override;
  std::optional<dlq_entry> head_of(const std::string& consumer,
                                   const std::string& order_key) override;
  std::optional<std::string> status_of(const std::string& consumer,
                                       const std::string& event_id) override;
  std::optional<dlq_entry> get(std::int64_t id) override;
  std::vector<dlq_entry> list(const std::string& status, int limit) override;
  std::vector<dlq_group> groups() override;
  std::vector<dlq_entry> in_group(const std::string& fingerprint) override;
  std::optional<dlq_entry>
  begin_replay(std::int64_t id, std::string& status_if_refused) override;
  std::optional<std::pair<std::string, std::string>>
  replay_target(std::int64_t id) override;
  void finish_replay(std::int64_t id, std::int32_t partition,
                     std::int64_t offset, const std::string& action,
                     const std::string& actor,
                     const std::string& outcome) override;
  void record_action(std::int64_t id, const std::string& action,
                     const std::string& actor,
                     const std::string& outcome) override;
  std::vector<dlq_entry> claim_stale_replays(std::chrono::milliseconds grace,
                                             int limit) override;
  discard_result discard(std::int64_t id, const std::string& actor) override;
  std::vector<std::int64_t> orphaned_heads(int limit) override;

  /// Error class plus the message's shape (numbers, UUIDs and quoted text
  /// replaced), so the same failure on different events groups together.
  static std::string fingerprint_of(const std::string& error_class,
                                    const std::string& message);

private:
  std::unique_ptr<session> db_;
};

} // namespace ef::persistence
