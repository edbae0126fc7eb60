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
  "status, extract(epoch FROM clock_timestamp() - parked_at)::float8, "
  "coalesce(replay_error, '')";

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
  e.replay_error = r[20].as<std::string>();
  return e;
}

std::string select_entries(const std::string& where_etc) {
  return std::string("SELECT ") + entry_columns + " FROM dlq_events " +
         where_etc;
}

/// The name of an entry without an event ID, from its key and value (SQL
/// expressions of bytea): "bytes:" and 128 bits of a SHA-256 over the key's
/// length, the key and the value. The one definition, for park() and
/// undecodable_key() alike.
std::string bytes_key_sql(const std::string& key, const std::string& value) {
  return "'bytes:' || left(encode(sha256(int4send(length(" + key + ")) || " +
         key + " || " + value + "), 'hex'), 32)";
}

/// A group's short id: the first 12 hex digits of its fingerprint's SHA-256.
const char* group_id_sql =
  "left(encode(sha256(convert_to(fingerprint, 'UTF8')), 'hex'), 12)";

/// Entries of the same consumer and order as entry $1, before it (`<`) or
/// after it (`>`), in their order.
std::string same_order_as_entry(const char* side) {
  return std::string("(consumer, order_key) = (SELECT consumer, order_key FROM "
                     "dlq_events WHERE id = $1) AND (source_offset, id) ") +
         side + " (SELECT source_offset, id FROM dlq_events WHERE id = $1)";
}

/// An entry's name from the parameters holding its event ID ("" for none)
/// and its key and value in hex.
std::string entry_name_sql(const char* event_id, const char* key_hex,
                           const char* value_hex) {
  return std::string("coalesce(nullif(") + event_id + ", ''), " +
         bytes_key_sql(std::string("decode(") + key_hex + ", 'hex')",
                       std::string("decode(") + value_hex + ", 'hex')") +
         ")";
}

/// An entry whose replay was asked for and whose publish the broker never
/// acknowledged: it can be discarded, and its replay gives up in time.
const char* never_published = "status = 'replaying' AND replay_offset IS NULL";

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

parked_entry dlq_store::park(const dlq_entry& e, park_as how) {
  // Text columns get printable text (a foreign producer's key, headers or a
  // message quoting them need not be UTF-8); the key and value are also
  // kept byte for byte.
  auto key_hex = to_hex(e.key.empty() ? e.order_key : e.key);
  auto value_hex = to_hex(e.value);
  auto fingerprint = printable(
    e.fingerprint.empty() ? fingerprint_of(e.error_class, e.error_message)
                          : e.fingerprint);
  return db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    pqxx::result r;
    if (how == park_as::failed_replay) {
      // The consumer failed its replay of entry e.id: parked again, with
      // the new failure. Only from replaying or replayed: a decision taken
      // meanwhile (a discard) stands.
      r = w.exec_params(
        "UPDATE dlq_events SET status = 'parked', resolved_at = NULL, "
        "pruned_at = NULL, key = decode($2, 'hex'), value = decode($3, "
        "'hex'), traceparent = $4, error_class = $5, error_message = $6, "
        "fingerprint = $7, attempts = $8, last_failure_at = coalesce("
        "nullif($9, '')::timestamptz, clock_timestamp()), parked_at = "
        "clock_timestamp() WHERE id = $1 AND consumer = $10 AND "
        "status IN ('replaying', 'replayed') RETURNING id, status",
        e.id, key_hex, value_hex, printable(e.traceparent),
        printable(e.error_class), printable(e.error_message), fingerprint,
        e.attempts, e.last_failure_at, printable(e.consumer));
      if (r.empty())
        r = w.exec_params("SELECT id, status FROM dlq_events WHERE id = $1 "
                          "AND consumer = $2",
                          e.id, printable(e.consumer));
    } else {
      // A new entry only: an existing one keeps its status, so a delivery
      // of a decided entry stays a duplicate. A copy read from the DLQ
      // topic is stored only if its consumer has not applied the event
      // since: a consumer whose entry could not be stored after the DLQ's
      // ack (database down) tries the event again, and it may then pass.
      std::optional<std::string> uuid;
      if (uuid_at(e.event_id, 0) && e.event_id.size() == 36)
        uuid = e.event_id;
      r = w.exec_params(
        "INSERT INTO dlq_events (consumer, event_id, order_key, key, "
        "traceparent, value, event_type, error_class, error_message, "
        "fingerprint, attempts, source_topic, source_partition, "
        "source_offset, first_failure_at, last_failure_at) SELECT $1, " +
          entry_name_sql("$2", "$4", "$6") +
          ", $3, decode($4, 'hex'), $5, decode($6, 'hex'), nullif($7, ''), "
          "$8, $9, $10, $11, $12, $13, $14, "
          "coalesce(nullif($15, '')::timestamptz, clock_timestamp()), "
          "coalesce(nullif($16, '')::timestamptz, clock_timestamp()) "
          "WHERE NOT $17 OR NOT EXISTS (SELECT 1 FROM processed_events "
          "WHERE consumer = $1 AND event_id = $18::uuid) "
          "ON CONFLICT (consumer, event_id) DO NOTHING RETURNING id, status",
        printable(e.consumer), printable(e.event_id), printable(e.order_key),
        key_hex, printable(e.traceparent), value_hex, printable(e.event_type),
        printable(e.error_class), printable(e.error_message), fingerprint,
        e.attempts, printable(e.source_topic), e.source_partition,
        e.source_offset, e.first_failure_at, e.last_failure_at,
        how == park_as::copy, uuid);
      if (r.empty())
        r = w.exec_params("SELECT id, status FROM dlq_events WHERE consumer "
                          "= $1 AND event_id = " +
                            entry_name_sql("$2", "$3", "$4"),
                          printable(e.consumer), printable(e.event_id), key_hex,
                          value_hex);
    }
    w.commit();
    if (r.empty())
      return parked_entry{}; // a copy of an event its consumer applied
    return parked_entry{r[0][0].as<std::int64_t>(), r[0][1].as<std::string>()};
  });
}

std::string dlq_store::undecodable_key(const std::string& key,
                                       const std::string& value) {
  return db_->run([&](pqxx::connection& c) {
    pqxx::read_transaction t(c);
    return t
      .exec_params1("SELECT " +
                      bytes_key_sql("decode($1, 'hex')", "decode($2, 'hex')"),
                    to_hex(key), to_hex(value))[0]
      .as<std::string>();
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

std::optional<dlq_entry> dlq_store::blocker_of(std::int64_t id) {
  return db_->run([&](pqxx::connection& c) -> std::optional<dlq_entry> {
    pqxx::read_transaction t(c);
    auto r = t.exec_params(
      select_entries("WHERE status IN ('parked', 'replaying') AND " +
                     same_order_as_entry("<") +
                     " ORDER BY source_offset, id LIMIT 1"),
      id);
    if (r.empty())
      return std::nullopt;
    return entry_of(r[0]);
  });
}

std::optional<std::int64_t> dlq_store::next_after(std::int64_t id) {
  return db_->run([&](pqxx::connection& c) -> std::optional<std::int64_t> {
    pqxx::read_transaction t(c);
    auto r = t.exec_params("SELECT id FROM dlq_events WHERE status = 'parked' "
                           "AND " +
                             same_order_as_entry(">") +
                             " ORDER BY source_offset, id LIMIT 1",
                           id);
    if (r.empty())
      return std::nullopt;
    return r[0][0].as<std::int64_t>();
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
         t.exec(std::string("SELECT ") + group_id_sql +
                ", fingerprint, min(error_class), min(error_message), "
                "count(*), extract(epoch FROM clock_timestamp() - "
                "min(parked_at))::float8 FROM dlq_events WHERE status = "
                "'parked' GROUP BY fingerprint ORDER BY count(*) DESC, "
                "fingerprint"))
      out.push_back({row[0].as<std::string>(), row[1].as<std::string>(),
                     row[2].as<std::string>(), row[3].as<std::string>(),
                     row[4].as<long>(), row[5].as<double>()});
  });
  return out;
}

std::vector<dlq_entry> dlq_store::in_group(const std::string& group) {
  std::vector<dlq_entry> out;
  db_->run([&](pqxx::connection& c) {
    out.clear();
    pqxx::read_transaction t(c);
    // By its short id, or by the fingerprint itself: `$(...)` in a shell
    // strips the message's final newline, so whitespace at the ends of
    // either does not count.
    for (const auto& row : t.exec_params(
           select_entries(std::string("WHERE status = 'parked' AND (") +
                          group_id_sql +
                          " = btrim($1) OR btrim(fingerprint, E' \t\r\n') "
                          "= btrim($1, E' \t\r\n')) ORDER BY "
                          "source_offset, id"),
           group))
      out.push_back(entry_of(row));
  });
  return out;
}

std::optional<dlq_entry> dlq_store::begin_replay(std::int64_t id,
                                                 replay_refusal& why,
                                                 const replay_start& how) {
  return db_->run([&](pqxx::connection& c) -> std::optional<dlq_entry> {
    why = {};
    pqxx::work w(c);
    // Only from parked: a replaying entry is being published (the sweep
    // publishes it again if that fails), and a replayed one was applied or
    // parked anew; replaying it again would count on a mark that
    // processed-events.retention may have deleted by then. And only the
    // head of its order: an entry behind an undecided one waits for it.
    // replay_started_at NULL: no publish attempted yet (the sweep's at once).
    auto r = w.exec_params(
      "UPDATE dlq_events d SET status = 'replaying', replay_started_at = "
      "CASE WHEN $3 THEN clock_timestamp() END, replay_requested_at = "
      "clock_timestamp(), replay_error = NULL, replay_partition = NULL, "
      "replay_offset = NULL, resolved_at = NULL WHERE d.id = $1 AND "
      "d.status = 'parked' AND NOT EXISTS (SELECT 1 FROM dlq_events e WHERE "
      "e.consumer = d.consumer AND e.order_key = d.order_key AND "
      "(e.source_offset, e.id) < (d.source_offset, d.id) AND e.status IN "
      "('parked', 'replaying') AND e.id <> $2) RETURNING id",
      id, how.released_by, how.publish_now);
    if (r.empty()) {
      auto s = w.exec_params("SELECT status FROM dlq_events WHERE id = $1", id);
      why.status = s.empty() ? "" : s[0][0].as<std::string>();
      if (why.status == "parked") {
        auto b = w.exec_params(
          "SELECT id, status FROM dlq_events WHERE status IN ('parked', "
          "'replaying') AND id <> $2 AND " +
            same_order_as_entry("<") + " ORDER BY source_offset, id LIMIT 1",
          id, how.released_by);
        if (!b.empty()) {
          why.behind = b[0][0].as<std::int64_t>();
          why.behind_status = b[0][1].as<std::string>();
        }
      }
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

void dlq_store::replay_failed(std::int64_t id, const std::string& action,
                              const std::string& actor,
                              const std::string& error) {
  db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    w.exec_params("UPDATE dlq_events SET replay_error = $2 WHERE id = $1", id,
                  printable(error));
    w.exec_params("INSERT INTO dlq_actions (dlq_id, action, actor, outcome) "
                  "VALUES ($1, $2, $3, $4)",
                  id, action, printable(actor),
                  printable("not acknowledged: " + error +
                            "; stays replaying, published again by the DLQ "
                            "handler"));
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
    // processes) never take the same entry within one grace period. One
    // never attempted (a release recorded without a broker) is due at once.
    auto ids = w.exec_params(
      "UPDATE dlq_events SET replay_started_at = clock_timestamp() WHERE id "
      "IN (SELECT id FROM dlq_events WHERE status = 'replaying' AND "
      "(replay_started_at IS NULL OR replay_started_at < clock_timestamp() - "
      "make_interval(secs => $1)) ORDER BY replay_started_at NULLS FIRST "
      "LIMIT $2 FOR UPDATE SKIP LOCKED) "
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

std::vector<dlq_entry>
dlq_store::give_up_replays(std::chrono::milliseconds give_up, int limit) {
  std::vector<dlq_entry> out;
  db_->run([&](pqxx::connection& c) {
    out.clear();
    pqxx::work w(c);
    // Never acknowledged: a replay whose publish landed but whose mark
    // failed is the sweep's to mark, never given up.
    auto ids = w.exec_params(
      std::string("SELECT id FROM dlq_events WHERE ") + never_published +
        " AND replay_requested_at < clock_timestamp() - make_interval(secs "
        "=> $1) ORDER BY replay_requested_at LIMIT $2 FOR UPDATE SKIP LOCKED",
      static_cast<double>(give_up.count()) / 1000.0, limit);
    for (const auto& row : ids) {
      auto id = row[0].as<std::int64_t>();
      out.push_back(
        entry_of(w.exec_params1(select_entries("WHERE id = $1"), id)));
      w.exec_params("UPDATE dlq_events SET status = 'parked', "
                    "replay_started_at = NULL WHERE id = $1",
                    id);
      w.exec_params(
        "INSERT INTO dlq_actions (dlq_id, action, actor, outcome) VALUES ($1, "
        "'give_up', 'dlq-sweeper', $2)",
        id,
        printable("no publish acknowledged within " +
                  std::to_string(give_up.count()) +
                  " ms; parked again (last error: " +
                  (out.back().replay_error.empty() ? std::string("none")
                                                   : out.back().replay_error) +
                  ")"));
    }
    w.commit();
  });
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
    // A replay whose publish was never acknowledged can be discarded too:
    // should its record land after all, its consumer skips it (the entry
    // is no longer replaying) and the mark below suppresses the event.
    auto r = w.exec_params(
      std::string(
        "UPDATE dlq_events SET status = 'discarded', resolved_at = "
        "clock_timestamp() WHERE id = $1 AND (status = 'parked' OR ") +
        never_published + ") RETURNING consumer, event_id",
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
      // A mark that says "discarded" already is the same decision (an entry
      // parked anew before issue 41's rule): it stands.
      if (marked.empty() &&
          w.exec_params1("SELECT outcome FROM processed_events WHERE consumer "
                         "= $1 AND event_id = $2::uuid",
                         consumer, event_id)[0]
              .as<std::string>() != "discarded")
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
