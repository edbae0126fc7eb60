#include "persistence/ops_queries.hpp"

#include "persistence/connection.hpp"
#include "persistence/dsn.hpp"
#include "persistence/lock_classes.hpp"

namespace ef::persistence {

ops_reader::ops_reader(const std::string& dsn)
    : db_(std::make_unique<session>(dsn, nullptr)) {
  // nop
}

ops_reader::~ops_reader() = default;

ops_rows ops_reader::read() {
  return db_->run([](pqxx::connection& c) {
    ops_rows out;
    pqxx::read_transaction t(c);
    auto o = t.exec1(
      "SELECT count(*), coalesce(extract(epoch FROM clock_timestamp() - "
      "min(created_at)), 0)::float8 FROM outbox WHERE sent_at IS NULL");
    out.outbox_unsent = o[0].as<long>();
    out.outbox_oldest_unsent_age_s = o[1].as<double>();
    for (const auto& r : t.exec("SELECT status, count(*) FROM dlq_events "
                                "GROUP BY status"))
      out.dlq_by_status[r[0].as<std::string>()] = r[1].as<long>();
    out.dlq_oldest_parked_age_s =
      t.exec1("SELECT coalesce(extract(epoch FROM clock_timestamp() - "
              "min(parked_at)), 0)::float8 FROM dlq_events WHERE status = "
              "'parked'")[0]
        .as<double>();
    out.dlq_oldest_unacknowledged_replay_age_s =
      t.exec1("SELECT coalesce(extract(epoch FROM clock_timestamp() - "
              "min(replay_requested_at)), 0)::float8 FROM dlq_events WHERE "
              "status = 'replaying' AND replay_offset IS NULL")[0]
        .as<double>();
    // Relay shard locks are advisory locks (relay_lock_class, shard).
    // By node name where the session carries one (application_name), else
    // as backend PID and client address.
    for (const auto& r : t.exec_params(
           "SELECT l.objid::int, CASE WHEN starts_with(a.application_name, "
           "$2) THEN substr(a.application_name, length($2) + 1) ELSE a.pid || "
           "'@' || coalesce(host(a.client_addr), 'local') END FROM pg_locks l "
           "JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' "
           "AND l.classid = $1 AND l.granted",
           relay_lock_class, std::string(node_session_prefix)))
      out.shard_owners[r[0].as<int>()] = r[1].as<std::string>();
    return out;
  });
}

ops_rows read_ops_rows(const std::string& dsn) {
  return ops_reader(dsn).read();
}

namespace {

/// Runs one retention DELETE (`sql` takes $1 = age in seconds, $2 = at most
/// this many rows) in its own short transaction; returns the rows deleted.
/// Every one of them selects its victims FOR UPDATE SKIP LOCKED: retention
/// never waits on (or blocks) the hot path.
long delete_batch(const std::string& dsn, const char* sql, int age_s,
                  int limit) {
  try {
    auto conn = open_connection(dsn);
    pqxx::work w(*conn);
    auto r = w.exec_params(sql, age_s, limit);
    w.commit();
    return static_cast<long>(r.affected_rows());
  } catch (...) {
    rethrow_as_db_error();
  }
}

} // namespace

long delete_sent_outbox(const std::string& dsn, int age_s, int limit) {
  // By creation time, not send time: a republished row must not outlive
  // the processed_events marks of its first delivery (see config
  // validation).
  return delete_batch(
    dsn,
    "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE sent_at "
    "IS NOT NULL AND created_at < clock_timestamp() - make_interval(secs => "
    "$1) ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
    age_s, limit);
}

long delete_processed_marks(const std::string& dsn, int age_s, int limit) {
  // Applied marks only, and only once their outbox row is gone too: while
  // the row exists a repair may publish the event again, and its mark must
  // still suppress it. A "discarded" mark is an operator's decision and is
  // kept for good (a few rows: one per discarded event).
  return delete_batch(
    dsn,
    "DELETE FROM processed_events WHERE (consumer, event_id) IN (SELECT "
    "p.consumer, p.event_id FROM processed_events p WHERE p.processed_at < "
    "clock_timestamp() - make_interval(secs => $1) AND p.outcome = "
    "'applied' AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = "
    "p.event_id) LIMIT $2 FOR UPDATE OF p SKIP LOCKED)",
    age_s, limit);
}

long delete_idempotency_keys(const std::string& dsn, int age_s, int limit) {
  return delete_batch(
    dsn,
    "DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM "
    "idempotency_keys WHERE created_at < clock_timestamp() - "
    "make_interval(secs => $1) ORDER BY created_at LIMIT $2 FOR UPDATE "
    "SKIP LOCKED)",
    age_s, limit);
}

long prune_resolved_dlq_entries(const std::string& dsn, int age_s, int limit) {
  // The record's bytes and the actions go; the row stays with its status,
  // so a copy of the record read again from the DLQ topic (a DLQ reader
  // whose group starts over at the log start) finds the decision taken and
  // cannot park the event anew (dlq_store::park).
  return delete_batch(
    dsn,
    "WITH pruned AS (UPDATE dlq_events SET value = ''::bytea, key = NULL, "
    "pruned_at = clock_timestamp() WHERE id IN (SELECT id FROM dlq_events "
    "WHERE status IN ('replayed', 'discarded') AND pruned_at IS NULL AND "
    "resolved_at < clock_timestamp() - make_interval(secs => $1) ORDER BY "
    "resolved_at LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id), actions AS "
    "(DELETE FROM dlq_actions WHERE dlq_id IN (SELECT id FROM pruned)) "
    "SELECT id FROM pruned",
    age_s, limit);
}

bool database_reachable(const std::string& dsn, std::string& error) {
  try {
    auto conn = open_connection(dsn);
    pqxx::nontransaction t(*conn);
    t.exec1("SELECT 1");
    return true;
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
}

} // namespace ef::persistence
