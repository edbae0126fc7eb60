#include "app/tools/chaos_report.hpp"

#include "messages/ids.hpp"

#include <cstdio>
#include <iostream>

namespace ef::app::chaos_run {

namespace {

using json = nlohmann::json;

/// A digest of lines, as 16 hex digits: equal for two runs that injected
/// the same things in the same order.
std::string digest_of(const std::vector<std::string>& lines) {
  std::string text;
  for (auto& line : lines)
    text += line + "\n";
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(fnv1a64(text)));
  return hex;
}

json consumers_json(const config::settings& cfg, const counter_map& metrics) {
  json per_consumer;
  for (auto& c : cfg.consumer.enabled) {
    auto get = [&](const std::string& name) {
      auto i = metrics.find(name + "{consumer=\"" + c + "\"}");
      return i == metrics.end() ? std::uint64_t{0} : i->second;
    };
    per_consumer[c] = {
      {"deliveries", get("consumer_deliveries_total")},
      {"applied", get("consumer_applied_total")},
      {"duplicates_suppressed", get("consumer_duplicates_suppressed_total")},
      {"retries", get("consumer_retries_total")}};
  }
  return per_consumer;
}

/// Restarts per actor and crashes per point, from the tree's counters.
void add_restarts_and_crashes(const counter_map& metrics, json& report) {
  json restarts = json::object(), crashes = json::object();
  std::uint64_t total_restarts = 0;
  for (auto& [k, v] : metrics) {
    if (k.rfind("actor_restarts_total{", 0) == 0) {
      restarts[k.substr(std::string("actor_restarts_total").size())] = v;
      total_restarts += v;
    } else if (k.rfind("chaos_crashes_total{", 0) == 0) {
      crashes[k.substr(std::string("chaos_crashes_total").size())] = v;
    }
  }
  report["restarts"] = restarts;
  report["restarts_total"] = total_restarts;
  report["crashes_by_point"] = crashes;
}

} // namespace

json chaos_report(const config::settings& cfg, const chaos_plan& plan,
                  const chaos_outcome& o) {
  auto& stats = *o.clients;
  json report;
  report["orders_requested"] = plan.orders;
  report["orders_created"] = stats.created.load();
  report["orders_cancelled"] = stats.cancelled.load();
  report["client_failures"] = stats.failed.load();
  report["client_retries"] = stats.retries.load();
  report["logical_events"] = o.result.counts.events;
  report["topic_records"] = o.result.records;
  report["duplicate_records"] = o.result.duplicates;
  report["business_changes"] = o.result.counts.effects;
  report["consumers"] = consumers_json(cfg, o.metrics);
  add_restarts_and_crashes(o.metrics, report);
  report["chaos"] = {{"points", cfg.chaos.points},
                     {"rate", cfg.chaos.rate},
                     {"seed", cfg.chaos.seed}};
  report["seconds"] = o.seconds;
  report["settled"] = o.settled;
  report["phases_seconds"] = o.phases_seconds;
  report["broker_restarts"] = o.broker_restarts;
  report["backlog"] = plan.backlog;
  report["backlog_past_retention"] = plan.backlog_past_retention;
  report["broker_epochs"] = o.repairs.epoch;
  report["consumer_gaps"] = o.repairs.gaps;
  report["events_republished"] = o.repairs.republished_total;
  report["peak_rss_mib"] = o.peak_rss_mib;
  report["crashes"] = {{"count", o.crashed.size()},
                       {"digest", digest_of(o.crashed)},
                       {"injected", o.crashed}};
  report["broker_faults"] = {{"count", o.fault_lines.size()},
                             {"by_kind", json(o.faults_by_kind)},
                             {"digest", digest_of(o.fault_lines)},
                             {"injected", o.fault_lines}};
  report["verification"] = json::parse(to_json(o.result));
  report["ok"] = o.ok();
  return report;
}

void print_chaos_report(const json& report, const chaos_outcome& o) {
  auto& stats = *o.clients;
  auto& result = o.result;
  std::cout << "chaos run: " << stats.created << " orders (" << stats.cancelled
            << " cancelled), " << result.counts.events << " logical events, "
            << result.records << " topic records (" << result.duplicates
            << " duplicates), " << result.counts.effects
            << " business changes\n";
  for (auto& [c, v] : report["consumers"].items())
    std::cout << "  " << c << ": " << v["deliveries"] << " deliveries, "
              << v["applied"] << " applied, " << v["duplicates_suppressed"]
              << " duplicates suppressed, " << v["retries"] << " retries\n";
  auto& faults = report["broker_faults"];
  std::cout << "  restarts: " << report["restarts_total"].get<std::uint64_t>()
            << " " << report["restarts"].dump()
            << "\n  crashes by point: " << report["crashes_by_point"].dump()
            << "\n  injected crashes: " << o.crashed.size() << " (digest "
            << report["crashes"]["digest"].get<std::string>() << ")"
            << "\n  broker restarts: " << o.broker_restarts
            << ", broker epochs " << o.repairs.epoch << ", consumer gaps "
            << o.repairs.gaps << ", events republished "
            << o.repairs.republished_total
            << "\n  kafka faults: " << o.fault_lines.size() << " "
            << faults["by_kind"].dump() << " (digest "
            << faults["digest"].get<std::string>() << ")"
            << "\n  peak RSS: " << static_cast<long>(o.peak_rss_mib) << " MiB"
            << "\n  client retries: " << stats.retries
            << ", client failures: " << stats.failed
            << "\n  time: " << report["seconds"].dump() << "\n"
            << (o.settled ? "" : "  NOT QUIESCENT within the timeout\n")
            << to_text(result) << (o.ok() ? "OK\n" : "FAILED\n");
}

} // namespace ef::app::chaos_run
