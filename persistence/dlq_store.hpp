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
  std::string event_id;  ///< event UUID, or "bytes:<digest>" if undecodable
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
  /// Why the last publish of a replay failed ("" if none did).
  std::string replay_error;
};

/// A group of parked entries with the same failure fingerprint.
struct dlq_group {
  /// A short, stable name of the fingerprint (a digest prefix): what a
  /// command line or a URL carries instead of a multi-line message.
  std::string id;
  std::string fingerprint;
  std::string error_class;
  std::string example_message;
  long count = 0;
  double oldest_age_seconds = 0;
};

/// What a discard did.
enum class discard_result {
  discarded,      ///< the entry is discarded and its consumer's mark says so
  not_parked,     ///< no such entry, or it is neither parked nor a replay
                  ///< that was never published: nothing changed
  already_applied ///< its consumer applied the event meanwhile: nothing
                  ///< changed
};

/// How a parking meets an entry that exists already (docs/dlq.md, "A
/// decision holds forever").
enum class park_as {
  /// A consumer failed a delivery: a new entry is stored; an existing one
  /// keeps its status, whatever it is (a decided entry stays decided: the
  /// delivery is a duplicate).
  failure,
  /// A consumer failed the replay of this very entry: an entry replaying
  /// or replayed is parked again, with the new failure.
  failed_replay,
  /// The DLQ topic's reader: stored only if absent and its consumer has no
  /// mark for the event (a late copy never undoes a decision).
  copy,
};

/// An entry as a parking left it: its id (0 if nothing was stored) and
/// status.
struct parked_entry {
  std::int64_t id = 0;
  std::string status;
};

/// Why a replay did not start: the entry's status ("" if there is none),
/// or the earlier undecided entry of its order it waits behind.
struct replay_refusal {
  std::string status;
  std::int64_t behind = 0;
  std::string behind_status;
};

/// How a replay starts.
struct replay_start {
  /// The entry whose decision releases this one (0: an operator's replay).
  /// It may still be "replaying" (its consumer applied it before its mark),
  /// so it does not count as an undecided entry before this one.
  std::int64_t released_by = 0;
  /// False: the intent is recorded, and the DLQ handler publishes it at its
  /// next sweep (a command line without a broker).
  bool publish_now = true;
};

/// The DLQ's durable state as the DLQ handler, its operations and the
/// partition actors use it: the production dlq_store, or a fake in
/// deterministic actor tests. Every call may throw db_error.
///
/// An order's entries for one consumer are ordered by their source position.
/// Its head is the earliest undecided one (parked or replaying); the others
/// wait behind it. Only the head can be replayed; a decision on the head
/// releases the next parked entry (docs/dlq.md).
class dlq_records {
public:
  virtual ~dlq_records() = default;

  /// Records a parked delivery (see park_as). An entry without an event ID
  /// (`e.event_id` empty: the record could not be decoded) is named by its
  /// key and value bytes, as undecodable_key() names it.
  virtual parked_entry park(const dlq_entry& e, park_as how) = 0;

  /// The entry name of a record that cannot be decoded: "bytes:" and a
  /// digest of its key and value, so the same bytes delivered again (at any
  /// offset, after any restart) meet the same entry and its decision.
  virtual std::string undecodable_key(const std::string& key,
                                      const std::string& value) = 0;

  /// Order keys with parked entries of `consumer`.
  virtual std::set<std::string> parked_orders(const std::string& consumer) = 0;

  /// The oldest parked entry of (consumer, order_key), if any.
  virtual std::optional<dlq_entry> head_of(const std::string& consumer,
                                           const std::string& order_key) = 0;

  /// The earliest undecided (parked or replaying) entry before entry `id`
  /// of its consumer and order: what it waits behind, if anything.
  virtual std::optional<dlq_entry> blocker_of(std::int64_t id) = 0;

  /// The first parked entry after entry `id` of its consumer and order.
  virtual std::optional<std::int64_t> next_after(std::int64_t id) = 0;

  /// The entry's status for (consumer, event_id), if it has one.
  virtual std::optional<std::string> status_of(const std::string& consumer,
                                               const std::string& event_id) = 0;

  virtual std::optional<dlq_entry> get(std::int64_t id) = 0;
  /// Entries with `status` ("" = any), newest first.
  virtual std::vector<dlq_entry> list(const std::string& status, int limit) = 0;
  /// Parked entries grouped by fingerprint, largest group first.
  virtual std::vector<dlq_group> groups() = 0;
  /// Parked entries of one group, oldest first: `group` is its short id or
  /// its fingerprint (whitespace at either end ignored).
  virtual std::vector<dlq_entry> in_group(const std::string& group) = 0;

  /// Step 1 of a replay: records the intent durably (status replaying)
  /// before anything is published. Only a parked entry with no undecided
  /// entry of its order before it (but `how.released_by`) can start;
  /// returns the entry as it now is, or nullopt (`why` says why).
  virtual std::optional<dlq_entry>
  begin_replay(std::int64_t id, replay_refusal& why,
               const replay_start& how = {}) = 0;

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

  /// Records an action without changing the entry's status.
  virtual void record_action(std::int64_t id, const std::string& action,
                             const std::string& actor,
                             const std::string& outcome) = 0;

  /// A replay's publish failed with `error`: kept as the entry's last replay
  /// error, and the action recorded.
  virtual void replay_failed(std::int64_t id, const std::string& action,
                             const std::string& actor,
                             const std::string& error) = 0;

  /// Claims at most `limit` replaying entries whose publish is due: never
  /// attempted, or attempted longer than `grace` ago (a crash or a failed
  /// publish between the steps). Their clock restarts, so no other sweeper
  /// takes them within `grace`. Returns them.
  virtual std::vector<dlq_entry>
  claim_stale_replays(std::chrono::milliseconds grace, int limit) = 0;

  /// Parks again, with action give_up, at most `limit` entries whose
  /// replay was asked for longer than `give_up` ago and never acknowledged
  /// by the broker. Returns them as they were (with their last error).
  virtual std::vector<dlq_entry>
  give_up_replays(std::chrono::milliseconds give_up, int limit) = 0;

  /// Marks entry `id` discarded, writes its consumer's "discarded" mark
  /// (for an event with a UUID) and records the action, in one transaction.
  /// Only a parked entry, or a replaying one whose publish the broker never
  /// acknowledged, can be discarded; changes nothing unless it returns
  /// `discarded` (nor when its consumer applied the event).
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

  parked_entry park(const dlq_entry& e, park_as how) override;
  std::string undecodable_key(const std::string& key,
                              const std::string& value) override;
  std::set<std::string> parked_orders(const std::string& consumer) override;
  std::optional<dlq_entry> head_of(const std::string& consumer,
                                   const std::string& order_key) override;
  std::optional<dlq_entry> blocker_of(std::int64_t id) override;
  std::optional<std::int64_t> next_after(std::int64_t id) override;
  std::optional<std::string> status_of(const std::string& consumer,
                                       const std::string& event_id) override;
  std::optional<dlq_entry> get(std::int64_t id) override;
  std::vector<dlq_entry> list(const std::string& status, int limit) override;
  std::vector<dlq_group> groups() override;
  std::vector<dlq_entry> in_group(const std::string& group) override;
  std::optional<dlq_entry> begin_replay(std::int64_t id, replay_refusal& why,
                                        const replay_start& how) override;
  std::optional<std::pair<std::string, std::string>>
  replay_target(std::int64_t id) override;
  void finish_replay(std::int64_t id, std::int32_t partition,
                     std::int64_t offset, const std::string& action,
                     const std::string& actor,
                     const std::string& outcome) override;
  void record_action(std::int64_t id, const std::string& action,
                     const std::string& actor,
                     const std::string& outcome) override;
  void replay_failed(std::int64_t id, const std::string& action,
                     const std::string& actor,
                     const std::string& error) override;
  std::vector<dlq_entry> claim_stale_replays(std::chrono::milliseconds grace,
                                             int limit) override;
  std::vector<dlq_entry> give_up_replays(std::chrono::milliseconds give_up,
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
