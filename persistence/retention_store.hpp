#pragma once

#include <memory>
#include <string>

namespace ef::persistence {

/// The deletions retention makes (the janitor's), each up to `limit` rows
/// older than `age_s` seconds in one short transaction, returning how many
/// went. Production: database_retention (ops_queries.hpp and
/// recovery_journal.hpp, a connection per call); deterministic actor tests
/// give a fake. Throws db_error.
class retention_store {
public:
  virtual ~retention_store() = default;
  /// SENT outbox rows only, never an unsent one.
  virtual long delete_sent_outbox(int age_s, int limit) = 0;
  virtual long delete_idempotency_keys(int age_s, int limit) = 0;
  /// Replayed or discarded DLQ entries: their record's bytes and actions.
  virtual long prune_resolved_dlq_entries(int age_s, int limit) = 0;
  /// "applied" processed_events marks whose outbox row is gone.
  virtual long delete_processed_marks(int age_s, int limit) = 0;
  virtual long delete_journal_lines(int age_s, int limit) = 0;
};

/// The retention deletions in the database at `dsn`.
std::unique_ptr<retention_store> database_retention(std::string dsn);

} // namespace ef::persistence
