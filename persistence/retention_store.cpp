#include "persistence/retention_store.hpp"

#include "persistence/ops_queries.hpp"
#include "persistence/recovery_journal.hpp"

namespace ef::persistence {

namespace {

class database_retention_store : public retention_store {
public:
  explicit database_retention_store(std::string dsn) : dsn_(std::move(dsn)) {}

  long delete_sent_outbox(int age_s, int limit) override {
    return persistence::delete_sent_outbox(dsn_, age_s, limit);
  }
  long delete_idempotency_keys(int age_s, int limit) override {
    return persistence::delete_idempotency_keys(dsn_, age_s, limit);
  }
  long prune_resolved_dlq_entries(int age_s, int limit) override {
    return persistence::prune_resolved_dlq_entries(dsn_, age_s, limit);
  }
  long delete_processed_marks(int age_s, int limit) override {
    return persistence::delete_processed_marks(dsn_, age_s, limit);
  }
  long delete_journal_lines(int age_s, int limit) override {
    return persistence::delete_journal_lines(dsn_, age_s, limit);
  }

private:
  std::string dsn_;
};

} // namespace

std::unique_ptr<retention_store> database_retention(std::string dsn) {
  return std::make_unique<database_retention_store>(std::move(dsn));
}

} // namespace ef::persistence
