#include "persistence/consumer_controls.hpp"

#include "persistence/connection.hpp"

#include <pqxx/pqxx>

namespace ef::persistence {

namespace {

/// Parses a PostgreSQL int[] in text form ("{0,3}").
std::vector<std::int32_t> int_array(const std::string& text) {
  std::vector<std::int32_t> out;
  std::string n;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      n += c;
    } else if (!n.empty()) {
      out.push_back(std::stoi(n));
      n.clear();
    }
  }
  return out;
}

// The report and the answer in one statement: a member asks once a second.
constexpr const char* heartbeat_sql = R"sql(
  WITH seen AS (
    INSERT INTO consumer_members (consumer, member, node, state, partitions)
    VALUES ($1, $2, $3, $4, $5::int[])
    ON CONFLICT (consumer, member) DO UPDATE
      SET state = EXCLUDED.state, partitions = EXCLUDED.partitions,
          seen_at = clock_timestamp()
  )
  SELECT coalesce((SELECT paused FROM consumer_controls WHERE consumer = $1),
                  false))sql";

} // namespace

consumer_controls::consumer_controls(std::string dsn)
    : db_(std::make_unique<session>(std::move(dsn), [](pqxx::connection& c) {
        c.prepare("heartbeat", heartbeat_sql);
      })) {}

consumer_controls::~consumer_controls() = default;

bool consumer_controls::heartbeat(const member_report& me) {
  std::vector<std::int64_t> parts(me.partitions.begin(), me.partitions.end());
  return db_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    return t
      .exec_prepared1("heartbeat", me.consumer, me.member, me.node,
                      std::string(me.paused ? "paused" : "consuming"),
                      array_literal(parts))[0]
      .as<bool>();
  });
}

void consumer_controls::leave(const std::string& consumer,
                              const std::string& member) {
  db_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    t.exec_params(
      "DELETE FROM consumer_members WHERE consumer = $1 AND member = $2",
      consumer, member);
  });
}

bool consumer_controls::set_paused(const std::string& consumer, bool paused,
                                   const std::string& actor) {
  return db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    // The row is locked for the change: two operators deciding at once log
    // one change, not two.
    auto r = w.exec_params(
      "INSERT INTO consumer_controls (consumer, paused, changed_by) "
      "VALUES ($1, $2, $3) "
      "ON CONFLICT (consumer) DO UPDATE SET paused = EXCLUDED.paused, "
      "changed_at = clock_timestamp(), changed_by = EXCLUDED.changed_by "
      "WHERE consumer_controls.paused IS DISTINCT FROM EXCLUDED.paused "
      "RETURNING 1",
      consumer, paused, actor);
    if (r.empty())
      return false;
    w.exec_params("INSERT INTO consumer_control_log (consumer, action, actor) "
                  "VALUES ($1, $2, $3)",
                  consumer, std::string(paused ? "pause" : "resume"), actor);
    w.commit();
    return true;
  });
}

std::vector<control_row> consumer_controls::controls() {
  return db_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    std::vector<control_row> out;
    for (const auto& r : t.exec(
           "SELECT consumer, paused, to_char(changed_at AT TIME ZONE 'UTC', "
           "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), changed_by "
           "FROM consumer_controls ORDER BY consumer"))
      out.push_back({r[0].as<std::string>(), r[1].as<bool>(),
                     r[2].as<std::string>(), r[3].as<std::string>()});
    return out;
  });
}

std::vector<member_row> consumer_controls::members(const std::string& consumer,
                                                   double max_age_seconds) {
  return db_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    std::vector<member_row> out;
    for (const auto& r : t.exec_params(
           "SELECT member, node, state, partitions::text, "
           "extract(epoch FROM clock_timestamp() - seen_at)::float8 "
           "FROM consumer_members WHERE consumer = $1 AND seen_at > "
           "clock_timestamp() - make_interval(secs => $2) "
           "ORDER BY node, member",
           consumer, max_age_seconds))
      out.push_back({r[0].as<std::string>(), r[1].as<std::string>(),
                     r[2].as<std::string>(), int_array(r[3].as<std::string>()),
                     r[4].as<double>()});
    return out;
  });
}

void consumer_controls::log(const std::string& consumer,
                            const std::string& action,
                            const std::string& detail,
                            const std::string& actor) {
  db_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    t.exec_params("INSERT INTO consumer_control_log (consumer, action, "
                  "detail, actor) VALUES ($1, $2, $3, $4)",
                  consumer, action, detail, actor);
  });
}

} // namespace ef::persistence
