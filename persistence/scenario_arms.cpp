#include "persistence/scenario_arms.hpp"

#include "persistence/connection.hpp"

#include <nlohmann/json.hpp>

namespace ef::persistence {

namespace {

constexpr const char* arm_columns =
  "trace_id, scenario, coalesce(point, ''), consumer, poison, armed_by, "
  "array_to_json(seen_by)::text, coalesce(order_id::text, ''), "
  "coalesce(fired_by, ''), coalesce(to_char(fired_at AT TIME ZONE 'UTC', "
  "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), ''), disarmed_at IS NOT NULL";

scenario_arm arm_of(const pqxx::row& r) {
  scenario_arm a;
  a.trace_id = r[0].as<std::string>();
  a.scenario = r[1].as<std::string>();
  a.point = r[2].as<std::string>();
  a.consumer = r[3].as<std::string>();
  a.poison = r[4].as<bool>();
  a.armed_by = r[5].as<std::string>();
  a.seen_by = nlohmann::json::parse(r[6].as<std::string>())
                .get<std::vector<std::string>>();
  a.order_id = r[7].as<std::string>();
  a.fired_by = r[8].as<std::string>();
  a.fired_at = r[9].as<std::string>();
  a.disarmed = r[10].as<bool>();
  return a;
}

} // namespace

scenario_arm_store::scenario_arm_store(std::string dsn)
    : session_(std::make_unique<session>(std::move(dsn), nullptr)) {
  // nop
}

scenario_arm_store::~scenario_arm_store() = default;

void scenario_arm_store::insert(const scenario_arm& arm,
                                std::chrono::seconds ttl) {
  std::lock_guard<std::mutex> guard{mtx_};
  session_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    // Old runs' rows go as new ones come: the table stays a few rows long.
    w.exec("DELETE FROM scenario_arms WHERE expires_at < clock_timestamp() - "
           "interval '1 day'");
    w.exec_params(
      "INSERT INTO scenario_arms (trace_id, scenario, point, consumer, "
      "poison, armed_by, expires_at, seen_by) VALUES ($1, $2, NULLIF($3, ''), "
      "$4, $5, $6, clock_timestamp() + make_interval(secs => $7), "
      "ARRAY[$6])",
      arm.trace_id, arm.scenario, arm.point, arm.consumer, arm.poison,
      arm.armed_by, static_cast<long>(ttl.count()));
    w.commit();
  });
}

std::vector<scenario_arm> scenario_arm_store::live() {
  std::lock_guard<std::mutex> guard{mtx_};
  return session_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    std::vector<scenario_arm> out;
    for (const auto& r :
         t.exec(std::string("SELECT ") + arm_columns +
                " FROM scenario_arms WHERE disarmed_at IS NULL AND "
                "expires_at > clock_timestamp() ORDER BY armed_at"))
      out.push_back(arm_of(r));
    return out;
  });
}

void scenario_arm_store::seen(const std::string& node,
                              const std::vector<std::string>& traces) {
  if (traces.empty())
    return;
  std::lock_guard<std::mutex> guard{mtx_};
  session_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    t.exec_params("UPDATE scenario_arms SET seen_by = seen_by || $1::text "
                  "WHERE trace_id = ANY($2::text[]) AND NOT $1 = ANY(seen_by)",
                  node, array_literal(traces));
  });
}

bool scenario_arm_store::claim(const std::string& trace_id,
                               const std::string& node) {
  std::lock_guard<std::mutex> guard{mtx_};
  return session_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    return !t.exec_params("UPDATE scenario_arms SET fired_by = $2, "
                          "fired_at = clock_timestamp() WHERE trace_id = $1 "
                          "AND fired_by IS NULL AND disarmed_at IS NULL "
                          "RETURNING 1",
                          trace_id, node)
              .empty();
  });
}

void scenario_arm_store::placed(const std::string& trace_id,
                                const std::string& order_id) {
  std::lock_guard<std::mutex> guard{mtx_};
  session_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    t.exec_params("UPDATE scenario_arms SET order_id = $2::uuid WHERE "
                  "trace_id = $1",
                  trace_id, order_id);
  });
}

void scenario_arm_store::disarm(const std::string& trace_id) {
  std::lock_guard<std::mutex> guard{mtx_};
  session_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    t.exec_params("UPDATE scenario_arms SET disarmed_at = clock_timestamp() "
                  "WHERE trace_id = $1 AND disarmed_at IS NULL",
                  trace_id);
  });
}

void scenario_arm_store::remove(const std::string& trace_id) {
  std::lock_guard<std::mutex> guard{mtx_};
  session_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    t.exec_params("DELETE FROM scenario_arms WHERE trace_id = $1", trace_id);
  });
}

std::optional<scenario_arm>
scenario_arm_store::of_order(const std::string& order_id) {
  std::lock_guard<std::mutex> guard{mtx_};
  return session_->run([&](pqxx::connection& c) -> std::optional<scenario_arm> {
    pqxx::nontransaction t(c);
    auto r = t.exec_params(std::string("SELECT ") + arm_columns +
                             " FROM scenario_arms WHERE order_id = $1::uuid",
                           order_id);
    if (r.empty())
      return std::nullopt;
    return arm_of(r[0]);
  });
}

std::vector<std::string> scenario_arm_store::live_nodes() {
  std::lock_guard<std::mutex> guard{mtx_};
  return session_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    std::vector<std::string> out;
    for (const auto& r : t.exec_params(
           "SELECT DISTINCT substr(application_name, length($1) + 1) FROM "
           "pg_stat_activity WHERE starts_with(application_name, $1) AND "
           "datname = current_database() ORDER BY 1",
           std::string(node_session_prefix)))
      out.push_back(r[0].as<std::string>());
    return out;
  });
}

} // namespace ef::persistence
