#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ef::persistence {

/// What operators need to see from the database, in one snapshot.
struct ops_rows {
  long outbox_unsent = 0;
  double outbox_oldest_unsent_age_s = 0; ///< 0 if nothing is unsent
  std::map<std::string, long> dlq_by_status;
  double dlq_oldest_parked_age_s = 0;
  /// Since the oldest replay no broker acknowledged was asked for.
  double dlq_oldest_unacknowledged_replay_age_s = 0;
  /// shard -> "pid@client" of the session holding its relay lock.
  std::map<int, std::string> shard_owners;
};

class session;

/// Where the gauge sampler reads its snapshot: ops_reader, or a fake in
/// deterministic actor tests.
class ops_source {
public:
  virtual ~ops_source() = default;
  /// Throws db_error.
  virtual ops_rows read() = 0;
};

/// Reads the snapshot over one connection it keeps (reopened after it
/// broke), for a caller that reads every second. Not thread-safe.
class ops_reader : public ops_source {
public:
  explicit ops_reader(const std::string& dsn);
  ~ops_reader() override;
  /// Throws db_error. Cheap: index-backed counts.
  ops_rows read() override;

private:
  std::unique_ptr<session> db_;
};

/// Reads the snapshot once, over a connection for the call (throws
/// db_error).
ops_rows read_ops_rows(const std::string& dsn);

/// Deletes up to `limit` SENT outbox rows older than `age_s` seconds (never
/// an unsent row), in one short transaction. Returns how many went.
long delete_sent_outbox(const std::string& dsn, int age_s, int limit);

/// Deletes up to `limit` "applied" processed_events marks older than
/// `age_s` whose outbox row is gone; "discarded" marks are kept.
long delete_processed_marks(const std::string& dsn, int age_s, int limit);

/// Deletes up to `limit` idempotency keys created more than `age_s` ago.
long delete_idempotency_keys(const std::string& dsn, int age_s, int limit);

/// Prunes up to `limit` replayed or discarded DLQ entries resolved more
/// than `age_s` ago: their record's bytes and actions are deleted, the row
/// and its decision stay. Parked and replaying ones are untouched.
long prune_resolved_dlq_entries(const std::string& dsn, int age_s, int limit);

/// True if the database answers a trivial query within its connect timeout.
bool database_reachable(const std::string& dsn, std::string& error);

} // namespace ef::persistence
