#pragma once

#include <string>
#include <vector>

namespace ef::persistence {

/// One versioned schema change. Versions are applied in ascending order, each
/// in its own transaction, and recorded in schema_migrations.
struct migration {
  int version;
  std::string name;
  std::string sql;
};

/// The schema history, oldest first. Never edit a released entry: append.
const std::vector<migration>& migrations();

/// Applies every migration not yet recorded. Safe to run concurrently from
/// several processes (serialized by an advisory lock) and idempotent.
/// Returns the versions it applied; throws db_error.
std::vector<int> migrate(const std::string& dsn);

/// Applies a consumer's own migrations (consumer::migrations(); version =
/// position + 1) not yet recorded in consumer_migrations for `consumer`,
/// under the same lock. Needs the core schema (migrate() first). Returns
/// the versions it applied; throws db_error.
std::vector<int> migrate_consumer(const std::string& dsn,
                                  const std::string& consumer,
                                  const std::vector<std::string>& sql);

} // namespace ef::persistence
