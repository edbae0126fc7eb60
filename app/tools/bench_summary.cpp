// The figures `eventforge bench` prints: each beside the same SQL under
// pgbench, their ratio and its target; then the cost per order and the
// verifier's count of lost and doubled effects.

#include "app/tools/bench_phases.hpp"

#include <cstdio>

namespace ef::app::bench_run {

namespace {

/// One row of the table: the figure, EventForge's value, the baseline's,
/// their ratio (none if 0) and the target.
void row(const std::string& what, const std::string& ef, const std::string& pg,
         double x, const char* target) {
  char rs[16] = "-";
  if (x > 0)
    std::snprintf(rs, sizeof(rs), "%.2f", x);
  std::printf("%-46s %14s %26s %7s %8s\n", what.c_str(), ef.c_str(), pg.c_str(),
              rs, target);
}

std::string num(double x, const char* unit) {
  char b[48];
  std::snprintf(b, sizeof(b), "%.0f%s", x, unit);
  return std::string(b);
}

double backlog_figure(const json& report, const char* key) {
  return report.contains("backlog") ? report["backlog"].value(key, 0.0) : 0.0;
}

void print_throughput(const json& report) {
  auto& http = report["http"];
  auto& bj = report["baselines"];
  auto& r = report["ratios"];
  for (size_t i = 0; i < http.size(); ++i) {
    auto c = http[i]["clients"].get<int>();
    row("orders/s, " + std::to_string(c) + " keep-alive HTTP clients",
        num(http[i]["orders_per_s"], "/s"),
        i == 0 ? num(bj["api_order_tps"], " tps (1 order/tx, c=") +
                   std::to_string(c) + ")"
               : "",
        i == 0 ? r["http_orders_vs_api_sql"].get<double>() : 0,
        i == 0 ? ">= 2.0" : "");
    std::printf("%-46s %14s\n", "  HTTP latency p50 / p99 / max",
                (num(http[i]["p50_ms"], "") + " / " +
                 num(http[i]["p99_ms"], "") + " / " +
                 num(http[i]["max_ms"], " ms"))
                  .c_str());
  }
}

void print_latency(const latency_figures& latency) {
  auto& e2e = latency.e2e;
  for (auto& [name, s] : e2e.consumers) {
    char v2[64];
    std::snprintf(v2, sizeof(v2), "%.1f / %.1f ms", s.p50_ms, s.p99_ms);
    char pg[64];
    std::snprintf(pg, sizeof(pg), "published p50 %.1f ms",
                  e2e.published.p50_ms);
    row("e2e p50 / p99 at " + num(latency.rate, "/s") + ", " + name, v2, pg, 0,
        "5 / 20");
  }
}

void print_backlog(const json& report, const bench_plan& plan,
                   const baselines& base, const backlog_figures& bl) {
  auto& bj = report["baselines"];
  auto& r = report["ratios"];
  row("consumer effects/s (both), backlog",
      num(backlog_figure(report, "effects_per_s"), "/s"),
      num(bj["consumer_one_event_tps"], " tps (1 event/tx, c=") +
        std::to_string(base.consumer_clients) + ")",
      r["effects_vs_one_event_sql"], ">= 3.0");
  row("", "",
      num(bj["consumer_batch_events_per_s"], " events/s (") +
        std::to_string(base.batch_events) + "/tx)",
      r["effects_vs_batched_sql"], "");
  row("relay rows/s, first backlog rows, no consumer",
      num(backlog_figure(report, "relay_alone_rows_per_s"), "/s"),
      num(bj["relay_rows_per_s"], " rows/s (claim+mark)"),
      r["relay_vs_claim_sql"], ">= 0.6");
  row("relay rows/s, whole backlog (paced by consumers)",
      num(backlog_figure(report, "relay_rows_per_s"), "/s"), "", 0, "");
  std::printf(
    "%-46s %14s\n",
    ("backlog of " + std::to_string(plan.backlog) + ": drained, peak RSS")
      .c_str(),
    ((bl.drained ? std::string("yes, ") : std::string("NO, ")) +
     num(bl.peak_rss_mib, " MiB"))
      .c_str());
}

void print_lone(const json& l) {
  char v[64];
  std::snprintf(v, sizeof(v), "%.0f / %.1f / %.1f ms",
                l["first_ms"].get<double>(), l["p50_ms"].get<double>(),
                l["max_ms"].get<double>());
  char pub[64];
  std::snprintf(pub, sizeof(pub), "published p50 %.1f, max %.1f",
                l["published_p50_ms"].get<double>(),
                l["published_max_ms"].get<double>());
  row("lone orders (" + std::to_string(l["measured"].get<size_t>()) +
        "): first / p50 / max e2e",
      v, pub, 0, "200/10/30");
}

/// The cost phase's lines of the summary table.
void print_cost(const json& cost) {
  auto fmt = [](const json& x, const char* f) {
    if (x.is_null())
      return std::string("-");
    char b[48];
    std::snprintf(b, sizeof(b), f, x.get<double>());
    return std::string(b);
  };
  std::printf("cost per order (%s; total = pipeline + PostgreSQL):\n",
              cost["durability"].get<std::string>().c_str());
  std::printf("  %-8s %-28s %-16s %-14s %-22s\n", "rate",
              "CPU ms total/pipeline/pg", "ctx sw pipe/pg", "tx / stmts",
              "e2e p50/p99 ms");
  for (auto& r : cost["runs"]) {
    if (!r.value("applied", false)) {
      std::printf("  %-8s not all orders were applied\n",
                  fmt(r["rate"], "%.0f/s").c_str());
      continue;
    }
    auto& cpu = r["cpu_ms_per_order"];
    auto& sw = r["context_switches_per_order"];
    std::string e2e;
    for (auto& [name, s] : r["e2e"]["consumers"].items())
      e2e += (e2e.empty() ? "" : ", ") + fmt(s["p50_ms"], "%.1f") + "/" +
             fmt(s["p99_ms"], "%.1f");
    std::printf(
      "  %-8s %-28s %-16s %-14s %-22s\n", fmt(r["rate"], "%.0f/s").c_str(),
      (fmt(cpu["total"], "%.2f") + " / " + fmt(cpu["pipeline"], "%.2f") +
       " / " + fmt(cpu["postgres"], "%.2f"))
        .c_str(),
      (fmt(sw["pipeline"], "%.0f") + " / " + fmt(sw["postgres"], "%.0f"))
        .c_str(),
      (fmt(r["transactions_per_order"], "%.1f") + " / " +
       fmt(r["statements_per_order"], "%.1f"))
        .c_str(),
      e2e.c_str());
    if (!r.contains("floor"))
      continue;
    auto& f = r["floor"];
    auto& fc = f["cpu_ms_per_order"];
    std::printf("  %-8s %-28s %-16s %-14s %s\n", "  floor",
                (fmt(fc["total"], "%.2f") + " / " + fmt(fc["client"], "%.2f") +
                 " / " + fmt(fc["postgres"], "%.2f"))
                  .c_str(),
                "", fmt(f["transactions_per_order"], "%.1f").c_str(),
                ("pipeline / floor " + fmt(f["total_over_floor"], "%.2f") +
                 " (target 1.25 at 100/s, 1.0 at 400/s), PostgreSQL's part " +
                 fmt(f["postgres_over_floor"], "%.2f"))
                  .c_str());
  }
  auto& idle = cost["idle"];
  std::printf("  idle: pipeline %s%% of a core, PostgreSQL %s%%, %s "
              "transactions/s, %d threads\n",
              fmt(idle["pipeline_cpu_percent_of_core"], "%.1f").c_str(),
              fmt(idle["postgres_cpu_percent_of_core"], "%.1f").c_str(),
              fmt(idle["transactions_per_s"], "%.1f").c_str(),
              idle["threads"].get<int>());
}

} // namespace

void print_summary(const json& report, const bench_plan& plan,
                   const baselines& base, const latency_figures& latency,
                   const backlog_figures& backlog, const verification& v,
                   clock::time_point started) {
  std::printf("\n%-46s %14s %26s %7s %8s\n", "figure", "EventForge",
              "same SQL under pgbench", "ratio", "target");
  print_throughput(report);
  print_latency(latency);
  if (plan.backlog > 0)
    print_backlog(report, plan, base, backlog);
  if (report.contains("lone") && report["lone"].contains("first_ms"))
    print_lone(report["lone"]);
  if (report.contains("cost"))
    print_cost(report["cost"]);
  std::printf("%-46s %14s\n", "verifier: lost / doubled / violations",
              (std::to_string(report["verifier"]["lost"].get<long>()) + " / " +
               std::to_string(report["verifier"]["doubled"].get<long>()) +
               " / " + std::to_string(v.violations.size()))
                .c_str());
  std::printf("(latencies from %s; %.0f s in all)\n", latency.e2e.clock.c_str(),
              since(started));
}

} // namespace ef::app::bench_run
