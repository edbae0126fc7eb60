#include "persistence/outbox_store.hpp"

#include "persistence/connection.hpp"
#include "persistence/lock_classes.hpp"
#include "persistence/outbox_listener.hpp"

#include <algorithm>
#include <map>

namespace ef::persistence {

// `seq + 0`: see migration 5 (only the partial index orders by it). The
// epoch rides along (evaluated once per statement), so a batch costs no
// separate read of it.
const char* const sql::unsent =
  R"sql(
      SELECT seq, event_id, order_id, event_type, payload::text,
             coalesce(headers->>'traceparent', ''),
             to_char(created_at AT TIME ZONE 'UTC',
                     'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
             (SELECT max(epoch) FROM broker_epochs)
      FROM outbox WHERE shard = $1 AND sent_at IS NULL
        AND seq <> ALL($3::bigint[])
      ORDER BY seq + 0 LIMIT $2)sql";
// Alone in its statement: a statement's snapshot is taken when it starts, so
// an epoch read in the same statement as the lock would predate an epoch
// change that committed while this lock waited for it.
// Shared with every other marker, exclusive for an epoch change (see
// repair_store::begin_epoch): a mark either commits before the new epoch
// exists, or sees it and refuses. Sent with the mark's BEGIN.
std::string sql::epoch_guard(const std::string& lock_class) {
  return "SELECT pg_advisory_xact_lock_shared(" + lock_class + ", 0)";
}
// Epoch, ownership and the mark in one statement whose snapshot is taken
// after the guard was granted. pg_locks is the lock manager's live state.
const char* const sql::mark_sent =
  R"sql(
      WITH now_is AS (
        SELECT (SELECT max(epoch) FROM broker_epochs) AS epoch,
               EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
                       AND classid = $5 AND objid = $6 AND objsubid = 2
                       AND granted AND pid = pg_backend_pid()) AS owner),
      marked AS (
        UPDATE outbox o SET sent_at = clock_timestamp(),
               publish_attempts = publish_attempts + 1, last_error = NULL,
               epoch = $1, kafka_partition = x.p, kafka_offset = x.o
        FROM unnest($2::bigint[], $3::int[], $4::bigint[]) AS x(seq, p, o),
             now_is
        WHERE o.seq = x.seq AND o.sent_at IS NULL
          AND now_is.epoch = $1 AND now_is.owner
        RETURNING 1),
      announced AS (
        SELECT pg_notify('outbox_published', a.payload)
        FROM now_is, unnest($7::text[]) AS a(payload)
        WHERE now_is.epoch = $1 AND now_is.owner)
      SELECT epoch, owner, (SELECT count(*) FROM marked),
             (SELECT count(*) FROM announced) FROM now_is)sql";

struct outbox_store::impl {
  std::unique_ptr<pqxx::connection> conn;
  std::shared_ptr<outbox_listener> listener;
};

outbox_store::outbox_store(std::string dsn, int shard,
                           std::shared_ptr<outbox_listener> listener)
    : impl_(std::make_unique<impl>()), shard_(shard) {
  // Listening before the first read, so no insert can slip between them.
  impl_->listener = listener
                      ? std::move(listener)
                      : std::make_shared<outbox_listener>(dsn, shard + 1);
  impl_->conn = open_connection(dsn);
  try {
    auto& c = *impl_->conn;
    c.prepare("unsent", sql::unsent);
    c.prepare("current_epoch", "SELECT max(epoch) FROM broker_epochs");
    c.prepare("mark_sent", sql::mark_sent);
    c.prepare("record_failure",
              "UPDATE outbox SET publish_attempts = publish_attempts + 1, "
              "last_error = $2 WHERE seq = ANY($1::bigint[])");
  } catch (...) {
    rethrow_as_db_error();
  }
}

outbox_store::~outbox_store() = default;

bool outbox_store::try_acquire_shard() {
  try {
    pqxx::nontransaction t(*impl_->conn);
    auto r = t.exec_params("SELECT pg_try_advisory_lock($1, $2)",
                           relay_lock_class, shard_);
    return r[0][0].as<bool>();
  } catch (...) {
    rethrow_as_db_error();
  }
}

bool outbox_store::await_notify(int timeout_ms) {
  return impl_->listener->await(shard_, std::chrono::milliseconds(timeout_ms));
}

outbox_batch outbox_store::unsent(int limit,
                                  const std::vector<std::int64_t>& in_flight) {
  outbox_batch batch;
  auto& rows = batch.rows;
  try {
    pqxx::nontransaction t(*impl_->conn);
    auto r = t.exec_prepared("unsent", shard_, limit, array_literal(in_flight));
    rows.reserve(r.size());
    if (!r.empty())
      batch.epoch = r[0][7].as<int>();
    for (const auto& row : r) {
      outbox_row x;
      x.seq = row[0].as<std::int64_t>();
      x.event.event_id = row[1].as<std::string>();
      x.event.order_id = row[2].as<std::string>();
      x.event.event_type = row[3].as<std::string>();
      x.event.payload = row[4].as<std::string>();
      x.event.traceparent = row[5].as<std::string>();
      x.event.occurred_at = row[6].as<std::string>();
      rows.push_back(std::move(x));
    }
  } catch (...) {
    rethrow_as_db_error();
  }
  return batch;
}

int outbox_store::current_epoch() {
  try {
    pqxx::nontransaction t(*impl_->conn);
    return t.exec_prepared1("current_epoch")[0].as<int>();
  } catch (...) {
    rethrow_as_db_error();
  }
}

std::vector<std::string>
announcement_payloads(const std::map<std::int32_t, std::int64_t>& highest,
                      std::size_t max_bytes) {
  std::vector<std::string> out;
  std::string payload;
  for (auto& [p, o] : highest) {
    auto item = std::to_string(p) + ":" + std::to_string(o);
    if (!payload.empty() && payload.size() + 1 + item.size() > max_bytes) {
      out.push_back(std::move(payload));
      payload.clear();
    }
    payload += (payload.empty() ? "" : ",") + item;
  }
  if (!payload.empty())
    out.push_back(std::move(payload));
  return out;
}

mark_result outbox_store::mark_sent(int epoch,
                                    const std::vector<sent_position>& acked) {
  if (acked.empty())
    return mark_result::marked;
  std::vector<std::int64_t> seqs, offsets, partitions;
  std::map<std::int32_t, std::int64_t> last; // announced: highest per partition
  for (auto& a : acked) {
    seqs.push_back(a.seq);
    partitions.push_back(a.partition);
    offsets.push_back(a.offset);
    if (a.announce)
      last[a.partition] = std::max(last[a.partition], a.offset);
  }
  auto announce = array_literal(announcement_payloads(last));
  bool owner = true;
  try {
    // The guard and the mark in BEGIN's round trip; COMMIT in a second.
    auto& c = *impl_->conn;
    opening_transaction w(
      c, sql::epoch_guard(std::to_string(epoch_lock_class)) + "; " +
           execute_sql(c, "mark_sent",
                       {std::to_string(epoch), array_literal(seqs),
                        array_literal(partitions), array_literal(offsets),
                        std::to_string(relay_lock_class),
                        std::to_string(shard_), announce}));
    if (w.opened().size() != 1)
      throw std::logic_error("mark_sent returned " +
                             std::to_string(w.opened().size()) + " rows");
    auto r = w.opened()[0];
    if (r[0].as<int>() != epoch)
      return mark_result::epoch_changed; // marked nothing; rolls back
    owner = r[1].as<bool>();
    if (owner)
      w.commit();
  } catch (...) {
    rethrow_as_db_error();
  }
  if (!owner)
    throw std::runtime_error("relay " + std::to_string(shard_) +
                             ": no longer holds the shard lock; the rows of "
                             "this batch stay unsent for the shard's owner");
  return mark_result::marked;
}

void outbox_store::record_failure(const std::vector<std::int64_t>& seqs,
                                  const std::string& error) {
  if (seqs.empty())
    return;
  try {
    pqxx::work w(*impl_->conn);
    w.exec_prepared("record_failure", array_literal(seqs), error);
    w.commit();
  } catch (...) {
    rethrow_as_db_error();
  }
}

} // namespace ef::persistence
