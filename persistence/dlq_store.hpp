#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ef::persistence {

class session;

/// One dead-lettered delivery: the original record plus why and when it
/// failed. `value` holds the original bytes.
struct dlq_entry {
  std::int64_t id = 0;
  std::string consumer;
  std::string event_id; ///< event UUID, or "offset:<p>:<o>" if undecodable
  std::string order_key;
  std::string value;
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
  std::string status; ///< parked, replayed, discarded
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

/// The DLQ's durable state (dlq_events, dlq_actions). Throws db_error.
class dlq_store {
public:
  explicit dlq_store(std::string dsn);
  ~dlq_store();

  /// Records a parked delivery. Idempotent per (consumer, event_id): a second
  /// parking of the same delivery changes nothing; parking an entry that was
  /// replayed (and failed again) makes it parked again. Returns its id.
  /// `repark` is for the consumer that just failed the event again; the DLQ
  /// topic's reader passes false, so a late copy never undoes a replay, and
  /// never stores an entry for an event its consumer has applied since
  /// (then it returns 0).
  std::int64_t park(const dlq_entry& e, bool repark);

  /// Order keys with parked entries of `consumer`.
  std::set<std::string> parked_orders(const std::string& consumer);

  /// The oldest parked entry of (consumer, order_key), if any.
  std::optional<dlq_entry> head_of(const std::string& consumer,
                                   const std::string& order_key);

  /// The entry's status for (consumer, event_id), if it has one.
  std::optional<std::string> status_of(const std::string& consumer,
                                       const std::string& event_id);

  std::optional<dlq_entry> get(std::int64_t id);
  /// Entries with `status` ("" = any), newest first.
  std::vector<dlq_entry> list(const std::string& status, int limit);
  /// Parked entries grouped by fingerprint, largest group first.
  std::vector<dlq_group> groups();
  /// Parked entries of one fingerprint group, oldest first.
  std::vector<dlq_entry> in_group(const std::string& fingerprint);

  /// Sets the entry's status without recording an action.
  void set_status(std::int64_t id, const std::string& status);

  /// Sets the entry's status and records the action, in one transaction.
  /// Returns false (and records nothing) if the entry does not exist.
  bool resolve(std::int64_t id, const std::string& status,
               const std::string& action, const std::string& actor,
               const std::string& outcome);

  /// Error class plus the message's shape (numbers, UUIDs and quoted text
  /// replaced), so the same failure on different events groups together.
  static std::string fingerprint_of(const std::string& error_class,
                                    const std::string& message);

private:
  std::unique_ptr<session> db_;
};

} // namespace ef::persistence
