#include "persistence/outbox_store.hpp"

#include "persistence/connection.hpp"

#include <sstream>

namespace ef::persistence {

namespace {

// Advisory lock class for relay shards: (1701, shard).
constexpr int relay_lock_class = 1701;

std::string channel_of(int shard) {
  // Lowercase on purpose: LISTEN folds unquoted names, pqxx quotes them.
  return "outbox_shard_" + std::to_string(shard);
}

std::string pg_array(const std::vector<std::int64_t>& xs) {
  std::ostringstream out;
  out << '{';
  for (size_t i = 0; i < xs.size(); ++i)
    out << (i ? "," : "") << xs[i];
  out << '}';
  return out.str();
}

class wakeup : public pqxx::notification_receiver {
public:
  wakeup(pqxx::connection_base& c, const std::string& channel)
      : pqxx::notification_receiver(c, channel) {
    // nop
  }
  void operator()(const std::string&, int) override { fired = true; }
  bool fired = false;
};

} // namespace

struct outbox_store::impl {
  std::unique_ptr<pqxx::connection> conn;
  std::unique_ptr<wakeup> listener;
};

outbox_store::outbox_store(std::string dsn, int shard)
    : impl_(std::make_unique<impl>()), shard_(shard) {
  impl_->conn = open_connection(dsn);
  try {
    auto& c = *impl_->conn;
    c.prepare("unsent", R"sql(
      SELECT seq, event_id, order_id, event_type, payload::text,
             coalesce(headers->>'traceparent', ''),
             to_char(created_at AT TIME ZONE 'UTC',
                     'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
      FROM outbox WHERE shard = $1 AND sent_at IS NULL
      ORDER BY seq LIMIT $2)sql");
    c.prepare("mark_sent",
              "UPDATE outbox SET sent_at = clock_timestamp(), "
              "publish_attempts = publish_attempts + 1, last_error = NULL "
              "WHERE seq = ANY($1::bigint[]) AND sent_at IS NULL");
    c.prepare("record_failure",
              "UPDATE outbox SET publish_attempts = publish_attempts + 1, "
              "last_error = $2 WHERE seq = ANY($1::bigint[])");
    // LISTEN before the first read, so no insert can slip between them.
    impl_->listener = std::make_unique<wakeup>(c, channel_of(shard));
  } catch (...) {
    rethrow_as_db_error();
  }
}

outbox_store::~outbox_store() {
  // The receiver must go before the connection it is registered with.
  if (impl_)
    impl_->listener.reset();
}

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
  try {
    impl_->listener->fired = false;
    impl_->conn->await_notification(timeout_ms / 1000,
                                    (timeout_ms % 1000) * 1000);
    // await_notification returns quietly when the socket dies; surface it.
    if (!impl_->conn->is_open())
      throw db_error(db_errc::unavailable, "relay connection closed");
    return impl_->listener->fired;
  } catch (...) {
    rethrow_as_db_error();
  }
}

std::vector<outbox_row> outbox_store::unsent(int limit) {
  std::vector<outbox_row> rows;
  try {
    pqxx::nontransaction t(*impl_->conn);
    auto r = t.exec_prepared("unsent", shard_, limit);
    rows.reserve(r.size());
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
  return rows;
}

void outbox_store::mark_sent(const std::vector<std::int64_t>& seqs) {
  if (seqs.empty())
    return;
  try {
    pqxx::work w(*impl_->conn);
    w.exec_prepared("mark_sent", pg_array(seqs));
    w.commit();
  } catch (...) {
    rethrow_as_db_error();
  }
}

void outbox_store::record_failure(const std::vector<std::int64_t>& seqs,
                                  const std::string& error) {
  if (seqs.empty())
    return;
  try {
    pqxx::work w(*impl_->conn);
    w.exec_prepared("record_failure", pg_array(seqs), error);
    w.commit();
  } catch (...) {
    rethrow_as_db_error();
  }
}

} // namespace ef::persistence
