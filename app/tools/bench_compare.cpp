#include "app/tools/bench_runner.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>

// `eventforge bench --compare`: bench reports side by side (e.g. one per
// topology, bench/topologies.sh).

namespace ef::app {

namespace {

using json = nlohmann::json;

/// The value at `path` ("a/b/0/c") of `j`, or null.
const json& report_at(const json& j, const std::string& path) {
  static const json none;
  const json* x = &j;
  for (size_t i = 0; i <= path.size();) {
    auto end = path.find('/', i);
    if (end == std::string::npos)
      end = path.size();
    auto key = path.substr(i, end - i);
    if (x->is_array() && !key.empty() &&
        std::all_of(key.begin(), key.end(), ::isdigit)) {
      auto n = std::stoul(key);
      if (n >= x->size())
        return none;
      x = &(*x)[n];
    } else if (x->is_object() && x->contains(key)) {
      x = &(*x)[key];
    } else {
      return none;
    }
    i = end + 1;
  }
  return *x;
}

std::string report_figure(const json& x, const char* format) {
  if (!x.is_number())
    return "-";
  char b[32];
  std::snprintf(b, sizeof(b), format, x.get<double>());
  return b;
}

} // namespace

int compare_bench_reports(const std::vector<std::string>& labels,
                          const std::vector<std::string>& paths) {
  std::vector<json> reports;
  for (auto& p : paths) {
    std::ifstream in(p);
    json r = json::parse(in, nullptr, false);
    if (!in || r.is_discarded() || !r.is_object()) {
      std::cerr << "bench: " << p << " is not a bench report (--report)\n";
      return 2;
    }
    reports.push_back(std::move(r));
  }
  std::printf("%-44s", "figure");
  for (size_t i = 0; i < reports.size(); ++i)
    std::printf(" %24s",
                i < labels.size() ? labels[i].c_str() : paths[i].c_str());
  std::printf("\n");
  // Each row: a name and, per report, one or more figures joined by " / ".
  auto row = [&](const std::string& name,
                 const std::vector<std::pair<std::string, const char*>>& xs) {
    std::printf("%-44s", name.c_str());
    for (auto& r : reports) {
      std::string cell;
      for (auto& [path, format] : xs)
        cell += (cell.empty() ? "" : " / ") +
                report_figure(report_at(r, path), format);
      std::printf(" %24s", cell.c_str());
    }
    std::printf("\n");
  };
  row("HTTP orders/s, first client count", {{"http/0/orders_per_s", "%.0f"}});
  row("  / same-SQL pgbench", {{"ratios/http_orders_vs_api_sql", "%.2f"}});
  row("lone orders: first / p50 / max ms", {{"lone/first_ms", "%.0f"},
                                            {"lone/p50_ms", "%.1f"},
                                            {"lone/max_ms", "%.1f"}});
  auto& runs = report_at(reports.front(), "cost/runs");
  for (size_t i = 0; runs.is_array() && i < runs.size(); ++i) {
    auto at = "cost/runs/" + std::to_string(i) + "/";
    auto rate = report_figure(runs[i]["rate"], "%.0f/s");
    row(rate + ": CPU ms total / pipeline / pg",
        {{at + "cpu_ms_per_order/total", "%.2f"},
         {at + "cpu_ms_per_order/pipeline", "%.2f"},
         {at + "cpu_ms_per_order/postgres", "%.2f"}});
    row(rate + ": floor total / client / pg",
        {{at + "floor/cpu_ms_per_order/total", "%.2f"},
         {at + "floor/cpu_ms_per_order/client", "%.2f"},
         {at + "floor/cpu_ms_per_order/postgres", "%.2f"}});
    row(rate + ": pipeline / floor, pg / its floor",
        {{at + "floor/total_over_floor", "%.2f"},
         {at + "floor/postgres_over_floor", "%.2f"}});
    for (auto& [name, s] : runs[i]["e2e"]["consumers"].items())
      row(rate + ": e2e p50 / p99 ms, " + name,
          {{at + "e2e/consumers/" + name + "/p50_ms", "%.1f"},
           {at + "e2e/consumers/" + name + "/p99_ms", "%.1f"}});
  }
  row("idle: pipeline / pg % of a core",
      {{"cost/idle/pipeline_cpu_percent_of_core", "%.1f"},
       {"cost/idle/postgres_cpu_percent_of_core", "%.1f"}});
  row(
    "idle: transactions/s, threads",
    {{"cost/idle/transactions_per_s", "%.1f"}, {"cost/idle/threads", "%.0f"}});
  row("verifier: lost / doubled",
      {{"verifier/lost", "%.0f"}, {"verifier/doubled", "%.0f"}});
  return 0;
}

} // namespace ef::app
