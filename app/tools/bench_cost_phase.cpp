// (f) of `eventforge bench`: what an order costs at fixed rates (CPU of the
// pipeline and of PostgreSQL, context switches, transactions, statements
// and rows per order, end-to-end latency), what the idle pipeline costs,
// and each run against the floor at its rate. The load generator runs in
// this process: its thread's own CPU and context switches are taken out of
// the process's.

#include "app/tools/bench_phases.hpp"
#include "bench/cost.hpp"
#include <eventforge/config/logging.hpp>

#include <thread>

namespace ef::app::bench_run {

namespace {

/// The floor at one rate and the pipeline's cost over it: the total
/// (pipeline + PostgreSQL over PostgreSQL + pgbench) and PostgreSQL's part
/// alone.
json floor_json(const bench::floor_figures& f, const json& cpu) {
  auto over = [](const json& x, double floor) {
    return x.is_null() || floor <= 0 ? json(nullptr)
                                     : json(x.get<double>() / floor);
  };
  json pg = f.postgres_ms < 0 ? json(nullptr) : json(f.postgres_ms);
  return {{"orders", f.orders},
          {"clients", f.clients},
          {"cpu_ms_per_order",
           {{"total", f.total_ms() < 0 ? json(nullptr) : json(f.total_ms())},
            {"postgres", pg},
            {"client", f.client_ms}}},
          {"transactions_per_order", f.transactions},
          {"total_over_floor", over(cpu["total"], f.total_ms())},
          {"postgres_over_floor", over(cpu["postgres"], f.postgres_ms)}};
}

json pg_delta(const std::optional<double>& a, const std::optional<double>& b) {
  return a && b ? json(*b - *a) : json(nullptr);
}

/// The processes' and the database's counters, and how long to wait for
/// the database's: idle backends publish theirs within 10 s
/// (bench::stats_settle_s), so a run's end is read as soon as every order
/// was applied for the processes, that long later for the database.
struct sampler {
  const bench_plan& plan;
  const std::string& dsn;
  pid_t postmaster;

  void settle() const {
    std::this_thread::sleep_for(std::chrono::seconds(plan.stats_settle_s));
  }
  bench::cost_sample sample() const {
    auto s = bench::sample_processes(postmaster);
    bench::sample_database(dsn, s);
    return s;
  }
};

json idle_cost(const bench_plan& plan, const sampler& at) {
  ef::log::warn("bench: cost: the idle pipeline for {} s", plan.idle_seconds);
  at.settle();
  auto i0 = at.sample();
  std::this_thread::sleep_for(std::chrono::seconds(plan.idle_seconds));
  auto i1 = at.sample();
  auto idle_s = i1.at_s - i0.at_s;
  auto pg_idle = pg_delta(i0.postgres_cpu_s, i1.postgres_cpu_s);
  return {{"seconds", idle_s},
          {"pipeline_cpu_percent_of_core",
           100 * (i1.process_cpu_s - i0.process_cpu_s) / idle_s},
          {"postgres_cpu_percent_of_core",
           pg_idle.is_null() ? json(nullptr)
                             : json(100 * pg_idle.get<double>() / idle_s)},
          {"transactions_per_s",
           static_cast<double>(i1.transactions - i0.transactions) / idle_s},
          {"threads", i1.threads}};
}

/// The figures per order of one run of `orders` orders between samples s0
/// and s1, its load generator's own share taken out.
json per_order(const bench::cost_sample& s0, const bench::cost_sample& s1,
               const bench::load_result& load, long orders) {
  auto n = static_cast<double>(orders);
  auto pipeline_cpu =
    s1.process_cpu_s - s0.process_cpu_s - load.generator_cpu_s;
  // /proc/stat is sampled at each tick: it misses much of a workload of
  // short wake-ups like this one, so the total below is the processes'
  // own (precise) times, and the machine's figure is for reference.
  auto machine_cpu =
    s1.machine_busy_s - s0.machine_busy_s - load.generator_cpu_s;
  auto pipeline_switches = static_cast<double>(
    s1.process_switches - s0.process_switches - load.generator_switches);
  auto pg_cpu = pg_delta(s0.postgres_cpu_s, s1.postgres_cpu_s);
  json pg_switches = nullptr;
  if (s0.postgres_switches && s1.postgres_switches)
    pg_switches =
      static_cast<double>(*s1.postgres_switches - *s0.postgres_switches) / n;
  json statements = nullptr;
  if (s0.statements && s1.statements)
    statements = static_cast<double>(*s1.statements - *s0.statements) / n;
  return {
    {"cpu_ms_per_order",
     {{"total", pg_cpu.is_null()
                  ? json(nullptr)
                  : json(1000 * (pipeline_cpu + pg_cpu.get<double>()) / n)},
      {"machine_ticks", 1000 * machine_cpu / n},
      {"pipeline", 1000 * pipeline_cpu / n},
      {"postgres", pg_cpu.is_null() ? json(nullptr)
                                    : json(1000 * pg_cpu.get<double>() / n)}}},
    {"context_switches_per_order",
     {{"pipeline", pipeline_switches / n}, {"postgres", pg_switches}}},
    {"transactions_per_order",
     static_cast<double>(s1.transactions - s0.transactions) / n},
    {"statements_per_order", statements},
    {"rows_written_per_order",
     static_cast<double>(s1.rows_written - s0.rows_written) / n},
    {"threads", s1.threads}};
}

/// One fixed-rate run. The counters are settled at its start: by the wait
/// before the idle sample, then by each run's wait before its end sample.
json cost_run(const config::settings& cfg, const bench_plan& plan,
              const std::string& url, const telemetry& metrics,
              const sampler& at, double rate) {
  auto who = "cost" + std::to_string(static_cast<long>(rate));
  ef::log::warn("bench: cost: {:.0f} orders/s for {} s", rate,
                plan.cost_seconds);
  auto consumers = cfg.consumer.enabled.size();
  auto applied0 = metrics.sum("consumer_applied_total");
  auto s0 = at.sample();
  auto load = http_phase(url, 16, rate, plan.cost_seconds, who);
  auto orders = load.answered_2xx;
  bool applied =
    await_applied(metrics, applied0, orders, consumers, plan.timeout_s);
  auto s1 = bench::sample_processes(at.postmaster);
  at.settle();
  bench::sample_database(at.dsn, s1);
  if (!applied || orders == 0) {
    ef::log::error("bench: cost: {:.0f}/s: {} orders, not all applied", rate,
                   orders);
    return {{"rate", rate}, {"orders", orders}, {"applied", false}};
  }
  auto e2e =
    bench::measure_e2e(at.dsn, "bench-" + who + "-%", cfg.consumer.enabled);
  json per_consumer;
  for (auto& [name, s] : e2e.consumers)
    per_consumer[name] = to_json(s);
  json run = {{"rate", rate},
              {"orders", orders},
              {"applied", true},
              {"orders_per_s", load.per_second()},
              {"seconds", s1.at_s - s0.at_s}};
  run.update(per_order(s0, s1, load, orders));
  run["e2e"] = {{"clock", e2e.clock}, {"consumers", per_consumer}};
  return run;
}

} // namespace

json cost_phase(const config::settings& cfg, const bench_plan& plan,
                const endpoints& ep, const std::string& url,
                const telemetry& metrics,
                const std::vector<bench::floor_figures>& floors) {
  auto& dsn = ep.database_dsn;
  json out;
  out["durability"] = bench::durability_of(dsn);
  out["statements_counted"] = bench::enable_statement_counts(dsn);
  sampler at{plan, dsn, bench::postmaster_of(dsn)};
  out["idle"] = idle_cost(plan, at);
  json runs = json::array();
  for (auto rate : plan.cost_rates) {
    runs.push_back(cost_run(cfg, plan, url, metrics, at, rate));
    if (!runs.back()["applied"].get<bool>())
      continue;
    for (auto& f : floors)
      if (f.rate == rate)
        runs.back()["floor"] = floor_json(f, runs.back()["cpu_ms_per_order"]);
  }
  out["runs"] = runs;
  return out;
}

} // namespace ef::app::bench_run
