#include "persistence/dlq_store.hpp"

#include "persistence/connection.hpp"

#include "messages/text.hpp"

#include <algorithm>
#include <cctype>

namespace ef::persistence {

namespace {

const char* entry_columns =
  "id, consumer, event_id, order_key, encode(coalesce(key, "
  "convert_to(order_key, 'UTF8')), 'hex'), traceparent, encode(value, 'hex'), "
  "coalesce(event_type, ''), error_class, error_message, fingerprint, "
  "attempts, source_topic, source_partition, source_offset, "
  "to_char(first_failure_at AT TIME ZONE 'UTC', "
  "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
  "to_char(last_failure_at AT TIME ZONE 'UTC', "
  "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
  "to_char(parked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
  "status, extract(epoch FROM clock_timestamp() - parked_at)::float8";

std::string from_hex(const std::string& hex) {
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xf];
  }
  return out;
}

dlq_entry entry_of(const pqxx::row& r) {
  dlq_entry e;
  e.id = r[0].as<std::int64_t>();
  e.consumer = r[1].as<std::string>();
  e.event_id = r[2].as<std::string>();
  e.order_key = r[3].as<std::string>();
  e.key = from_hex(r[4].as<std::string>());
  e.traceparent = r[5].as<std::string>();
  e.value = from_hex(r[6].as<std::string>());
  e.event_type = r[7].as<std::string>();
  e.error_class = r[8].as<std::string>();
  e.error_message = r[9].as<std::string>();
  e.fingerprint = r[10].as<std::string>();
  e.attempts = r[11].as<int>();
  e.source_topic = r[12].as<std::string>();
  e.source_partition = r[13].as<int>();
  e.source_offset = r[14].as<std::int64_t>();
  e.first_failure_at = r[15].as<std::string>();
  e.last_failure_at = r[16].as<std::string>();
  e.parked_at = r[17].as<std::string>();
  e.status = r[18].as<std::string>();
  e.age_seconds = r[19].as<double>();
  return e;
}

std::string select_entries(const std::string& where_etc) {
  return std::string("SELECT ") + entry_columns + " FROM dlq_events " +
         where_etc;
}

} // namespace

dlq_store::dlq_store(std::string dsn)
    : db_(std::make_unique<session>(std::move(dsn), nullptr)) {
  // nop
}

dlq_store::~dlq_store() = default;

namespace {

/// True if a UUID in 8-4-4-4-12 hex form starts at s[i].
bool uuid_at(const std::string& s, size_t i) {
  static constexpr size_t dashes[] = {8, 13, 18, 23};
  if (s.size() - i < 36)
    return false;
  for (size_t k = 0; k < 36; ++k) {
    bool dash =
      k == dashes[0] || k == dashes[1] || k == dashes[2] || k == dashes[3];
    auto c = static_cast<unsigned char>(s[i + k]);
    if (dash ? c != '-' : !std::isxdigit(c))
      return false;
  }
  return true;
}

} // namespace

std::string dlq_store::fingerprint_of(const std::string& error_class,
                                      const std::string& message) {
  // One left-to-right scan (no std::regex: it is slow, and GCC 12 cannot
  // compile it warning-free under the sanitizers): UUIDs become <uuid>,
  // "quoted text" becomes "…", runs of digits become #.
  std::string shape;
  shape.reserve(message.size());
  for (size_t i = 0; i < message.size();) {
    auto c = message[i];
    if (uuid_at(message, i)) {
      shape += "<uuid>";
      i += 36;
    } else if (auto close =
                 c == '"' ? message.find('"', i + 1) : std::string::npos;
               close != std::string::npos) {
      shape += "\"…\"";
      i = close + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      shape += '#';
      while (i < message.size() &&
             std::isdigit(static_cast<unsigned char>(message[i])))
        ++i;
    } else {
      shape += c;
      ++i;
    }
  }
  return error_class + ": " + shape;
}

std::int64_t dlq_store::park(const dlq_entry& e, bool repark) {
  return db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    // A copy read from the DLQ topic (repark false) is stored only if its
    // consumer has not applied the event since: a consumer whose entry could
    // not be stored after the DLQ's ack (database down) tries the event
    // again, and it may then pass.
    std::optional<std::string> uuid;
    if (uuid_at(e.event_id, 0) && e.event_id.size() == 36)
      uuid = e.event_id;
    // Text columns get printable text (a foreign producer's key, headers
    // or a message quoting them need not be UTF-8); the key and value are
    // also kept byte for byte.
    auto r = w.exec_params(
      "INSERT INTO dlq_events (consumer, event_id, order_key, key, "
      "traceparent, value, event_type, error_class, error_message, "
      "fingerprint, attempts, source_topic, source_partition, source_offset, "
      "first_failure_at, last_failure_at) SELECT $1, $2, $3, decode($17, "
      "'hex'), $18, decode($4, 'hex'), nullif($5, ''), $6, $7, $8, $9, $10, "
      "$11, $12, $13::timestamptz, $14::timestamptz WHERE $15 OR NOT EXISTS "
      "(SELECT 1 FROM processed_events WHERE consumer = $1 AND event_id = "
      "$16::uuid) "
      "ON CONFLICT (consumer, event_id) DO UPDATE SET status = 'parked', "
      "resolved_at = NULL, pruned_at = NULL, key = EXCLUDED.key, value = "
      "EXCLUDED.value, traceparent = EXCLUDED.traceparent, error_class = "
      "EXCLUDED.error_class, "
      "error_message = EXCLUDED.error_message, fingerprint = "
      "EXCLUDED.fingerprint, attempts = EXCLUDED.attempts, last_failure_at = "
      "EXCLUDED.last_failure_at, parked_at = clock_timestamp() "
      "WHERE dlq_events.status <> 'parked' AND $15 RETURNING id",
      printable(e.consumer), printable(e.event_id), printable(e.order_key),
      to_hex(e.value), printable(e.event_type), printable(e.error_class),
      printable(e.error_message),
      printable(e.fingerprint.empty()
                  ? fingerprint_of(e.error_class, e.error_message)
                  : e.fingerprint),
      e.attempts, printable(e.source_topic), e.source_partition,
      e.source_offset, e.first_failure_at, e.last_failure_at, repark, uuid,
      to_hex(e.key.empty() ? e.order_key : e.key), printable(e.traceparent));
    std::int64_t id = 0;
    if (r.empty()) {
      auto existing =
        w.exec_params("SELECT id FROM dlq_events WHERE "
                      "consumer = $1 AND event_id = $2",
                      printable(e.consumer), printable(e.event_id));
      if (!existing.empty())
        id = existing[0][0].as<std::int64_t>();
    } else {
      id = r[0][0].as<std::int64_t>();
    }
    w.commit();
    return id;
  });
}

std::set<std::string> dlq_store::parked_orders(const std::string& consumer) {
  std::set<std::string> out;
  db_->run([&](pqxx::connection& c) {
    pqxx::read_transaction t(c);
    for (const auto& row : t.exec_params(
           "SELECT DISTINCT order_key FROM dlq_events WHERE consumer = $1 AND "
           "status = 'parked'",
           consumer))
      out.insert(row[0].as<std::string>());
  });
  return out;
}

std::optional<dlq_entry> dlq_store::head_of(const std::string& consumer,
                                            const std::string& order_key) {
  return db_->run([&](pqxx::connection& c) -> std::optional<dlq_entry> {
    pqxx::read_transaction t(c);
    auto r = t.exec_params(select_entries("WHERE consumer = $1 AND order_key "
                                          "= $2 AND status = 'parked' ORDER "
                                          "BY source_offset, id LIMIT 1"),
                           consumer, order_key);
    if (r.empty())
      return std::nullopt;
    return entry_of(r[0]);
  });
}

std::optional<std::string> dlq_store::status_of(const std::string& consumer,
                                                const std::string& event_id) {
  return db_->run([&](pqxx::connection& c) -> std::optional<std::string> {
    pqxx::read_transaction t(c);
    auto r = t.exec_params("SELECT status FROM dlq_events WHERE consumer = $1 "
                           "AND event_id = $2",
                           consumer, event_id);
    if (r.empty())
      return std::nullopt;
    return r[0][0].as<std::string>();
  });
}

std::optional<dlq_entry> dlq_store::get(std::int64_t id) {
  return db_->run([&](pqxx::connection& c) -> std::optional<dlq_entry> {
    pqxx::read_transaction t(c);
    auto r = t.exec_params(select_entries("WHERE id = $1"), id);
    if (r.empty())
      return std::nullopt;
    return entry_of(r[0]);
  });
}

std::vector<dlq_entry> dlq_store::list(const std::string& status, int limit) {
  std::vector<dlq_entry> out;
  db_->run([&](pqxx::connection& c) {
    pqxx::read_transaction t(c);
    for (const auto& row : t.exec_params(
           select_entries("WHERE $1 = '' OR status = $1 ORDER BY id DESC "
                          "LIMIT $2"),
           status, limit))
      out.push_back(entry_of(row));
  });
  return out;
}

std::vector<dlq_group> dlq_store::groups() {
  std::vector<dlq_group> out;
  db_->run([&](pqxx::connection& c) {
    pqxx::read_transaction t(c);
    for (const auto& row :
         t.exec("SELECT fingerprint, min(error_class), min(error_message), "
                "count(*), extract(epoch FROM clock_timestamp() - "
                "min(parked_at))::float8 FROM dlq_events WHERE status = "
                "'parked' GROUP BY fingerprint ORDER BY count(*) DESC"))
      out.push_back({row[0].as<std::string>(), row[1].as<std::string>(),
                     row[2].as<std::string>(), row[3].as<long>(),
                     row[4].as<double>()});
  });
  return out;
}

std::vector<dlq_entry> dlq_store::in_group(const std::string& fingerprint) {
  std::vector<dlq_entry> out;
  db_->run([&](pqxx::connection& c) {
    pqxx::read_transaction t(c);
    for (const auto& row :
         t.exec_params(select_entries("WHERE fingerprint = $1 AND status = "
                                      "'parked' ORDER BY source_offset, id"),
                       fingerprint))
      out.push_back(entry_of(row));
  });
  return out;
}

std::optional<dlq_entry>
dlq_store::begin_replay(std::int64_t id, std::string& status_if_refused) {
  return db_->run([&](pqxx::connection& c) -> std::optional<dlq_entry> {
    pqxx::work w(c);
    // Only from parked: a replaying entry is being published (the sweep
    // publishes it again if that fails), and a replayed one was applied or
    // parked anew; replaying it again would count on a mark that
    // processed-events.retention may have deleted by then.
    auto r = w.exec_params(
      "UPDATE dlq_events SET status = 'replaying', replay_started_at = "
      "clock_timestamp(), resolved_at = NULL WHERE id = $1 AND status = "
      "'parked' RETURNING id",
      id);
    if (r.empty()) {
      auto s = w.exec_params("SELECT status FROM dlq_events WHERE id = $1", id);
      status_if_refused = s.empty() ? "" : s[0][0].as<std::string>();
      return std::nullopt;
    }
    auto e = entry_of(w.exec_params1(select_entries("WHERE id = $1"), id));
    w.commit();
    return e;
  });
}

std::optional<std::pair<std::string, std::string>>
dlq_store::replay_target(std::int64_t id) {
  return db_->run([&](pqxx::connection& c)
                    -> std::optional<std::pair<std::string, std::string>> {
    pqxx::read_transaction t(c);
    auto r = t.exec_params(
      "SELECT consumer, status FROM dlq_events WHERE id = $1", id);
    if (r.empty())
      return std::nullopt;
    return std::make_pair(r[0][0].as<std::string>(), r[0][1].as<std::string>());
  });
}

void dlq_store::finish_replay(std::int64_t id, std::int32_t partition,
                              std::int64_t offset, const std::string& action,
                              const std::string& actor,
                              const std::string& outcome) {
  db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    w.exec_params("UPDATE dlq_events SET replay_partition = $2, "
                  "replay_offset = $3, status = CASE WHEN status = "
                  "'replaying' THEN 'replayed' ELSE status END, resolved_at "
                  "= CASE WHEN status = 'replaying' THEN clock_timestamp() "
                  "ELSE resolved_at END WHERE id = $1",
                  id, partition, offset);
    w.exec_params("INSERT INTO dlq_actions (dlq_id, action, actor, outcome) "
                  "VALUES ($1, $2, $3, $4)",
                  id, action, printable(actor), printable(outcome));
    w.commit();
  });
}

void dlq_store::record_action(std::int64_t id, const std::string& action,
                              const std::string& actor,
                              const std::string& outcome) {
  db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    w.exec_params("INSERT INTO dlq_actions (dlq_id, action, actor, outcome) "
                  "VALUES ($1, $2, $3, $4)",
                  id, action, printable(actor), printable(outcome));
    w.commit();
  });
}

std::vector<dlq_entry>
dlq_store::claim_stale_replays(std::chrono::milliseconds grace, int limit) {
  std::vector<dlq_entry> out;
  db_->run([&](pqxx::connection& c) {
    out.clear();
    pqxx::work w(c);
    // SKIP LOCKED and the new replay_started_at: two sweepers (two
    // processes) never take the same entry within one grace period.
    auto ids = w.exec_params(
      "UPDATE dlq_events SET replay_started_at = clock_timestamp() WHERE id "
      "IN (SELECT id FROM dlq_events WHERE status = 'replaying' AND "
      "replay_started_at < clock_timestamp() - make_interval(secs => $1) "
      "ORDER BY replay_started_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
      "RETURNING id",
      static_cast<double>(grace.count()) / 1000.0, limit);
    for (const auto& row : ids)
      out.push_back(entry_of(w.exec_params1(select_entries("WHERE id = $1"),
                                            row[0].as<std::int64_t>())));
    w.commit();
  });
  std::sort(out.begin(), out.end(),
            [](const dlq_entry& a, const dlq_entry& b) { return a.id < b.id; });
  return out;
}

std::vector<std::int64_t> dlq_store::orphaned_heads(int limit) {
  std::vector<std::int64_t> out;
  db_->run([&](pqxx::connection& c) {
    out.clear();
    pqxx::read_transaction t(c);
    // Parked behind an earlier event of the order that is now discarded,
    // with nothing else before it: the release its discard owed it.
    for (const auto& row : t.exec_params(
           "SELECT d.id FROM dlq_events d WHERE d.status = 'parked' AND "
           "d.error_class = 'parked_behind' AND EXISTS (SELECT 1 FROM "
           "dlq_events e WHERE e.consumer = d.consumer AND e.order_key = "
           "d.order_key AND (e.source_offset, e.id) < (d.source_offset, "
           "d.id)) AND NOT EXISTS (SELECT 1 FROM dlq_events e WHERE "
           "e.consumer = d.consumer AND e.order_key = d.order_key AND "
           "(e.source_offset, e.id) < (d.source_offset, d.id) AND e.status "
           "<> 'discarded') ORDER BY d.id LIMIT $1",
           limit))
      out.push_back(row[0].as<std::int64_t>());
  });
  return out;
}

discard_result dlq_store::discard(std::int64_t id, const std::string& actor) {
  return db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    auto r = w.exec_params("UPDATE dlq_events SET status = 'discarded', "
                           "resolved_at = clock_timestamp() WHERE id = $1 AND "
                           "status = 'parked' RETURNING consumer, event_id",
                           id);
    if (r.empty())
      return discard_result::not_parked;
    // The decision, where the idempotency guard meets it: a mark that says
    // "discarded", kept whatever the retention. If the consumer applied the
    // event meanwhile (a redelivered head may pass), the guard holds that
    // mark: the discard would say what did not happen, so it is refused.
    auto consumer = r[0][0].as<std::string>();
    auto event_id = r[0][1].as<std::string>();
    if (uuid_at(event_id, 0) && event_id.size() == 36) {
      auto marked = w.exec_params(
        "INSERT INTO processed_events (consumer, event_id, outcome) VALUES "
        "($1, $2::uuid, 'discarded') ON CONFLICT DO NOTHING RETURNING 1",
        consumer, event_id);
      if (marked.empty())
        return discard_result::already_applied; // rolled back
    }
    w.exec_params("INSERT INTO dlq_actions (dlq_id, action, actor, outcome) "
                  "VALUES ($1, 'discard', $2, 'discarded')",
                  id, printable(actor));
    w.commit();
    return discard_result::discarded;
  });
}

} // namespace ef::persistence
