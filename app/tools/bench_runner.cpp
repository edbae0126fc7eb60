#include "app/tools/bench_runner.hpp"

#include "kafka/lead_limit.hpp"

#include "app/tools/pipeline_host.hpp"
#include "bench/cost.hpp"
#include "bench/e2e_latency.hpp"
#include "bench/floor.hpp"
#include "bench/http_load.hpp"
#include "bench/pgbench.hpp"
#include "bench/sql_baselines.hpp"
#include "persistence/backlog_writer.hpp"
#include "persistence/invariant_queries.hpp"
#include "persistence/migrations.hpp"
#include <eventforge/actors/applied.hpp>
#include <eventforge/config/logging.hpp>
#include <eventforge/embedded/runtime.hpp>
#include <eventforge/embedded/verifier.hpp>

#include <nlohmann/json.hpp>
#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

namespace ef::app {

namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

double since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

/// The body of HTTP order i; `who` keeps each phase's orders apart, so the
/// latency query picks exactly the orders of its phase.
std::string order_body(const std::string& who, long i) {
  return R"({"customer_id":"bench-)" + who + "-" + std::to_string(i % 97) +
         R"(","items":[{"sku":"sku-)" + std::to_string(i % 13) + R"(","qty":)" +
         std::to_string(1 + i % 4) + R"(,"price_cents":)" +
         std::to_string(100 + i % 1000) + "}]}";
}

json machine() {
  json m;
  m["cores"] = std::thread::hardware_concurrency();
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);)
    if (line.rfind("model name", 0) == 0) {
      m["cpu"] = line.substr(line.find(':') + 2);
      break;
    }
  utsname u{};
  if (uname(&u) == 0)
    m["kernel"] = std::string(u.sysname) + " " + u.release;
  return m;
}

json to_json(const bench::latency_summary& s) {
  return {{"samples", s.samples},
          {"p50_ms", s.p50_ms},
          {"p90_ms", s.p90_ms},
          {"p99_ms", s.p99_ms},
          {"max_ms", s.max_ms}};
}

json to_json(const bench::load_result& r) {
  return {{"orders_per_s", r.per_second()},
          {"answered_2xx", r.answered_2xx},
          {"answered_other", r.answered_other},
          {"transport_errors", r.transport_errors},
          {"late", r.late},
          {"seconds", r.seconds},
          {"p50_ms", r.percentile_ms(50)},
          {"p99_ms", r.percentile_ms(99)},
          {"max_ms", r.percentile_ms(100)}};
}

/// Waits until the pipeline has published and applied everything and
/// committed every offset; false on timeout.
bool wait_drained(const config::settings& cfg, const endpoints& ep,
                  int timeout_s, const char* phase) {
  auto started = clock::now();
  auto next_note = started + std::chrono::seconds(10);
  while (!applied_gap(cfg, ep).empty()) {
    if (since(started) > timeout_s) {
      ef::log::error("bench: {}: the pipeline did not drain within {} s", phase,
                     timeout_s);
      return false;
    }
    if (clock::now() > next_note) {
      next_note = clock::now() + std::chrono::seconds(10);
      auto c = persistence::read_counts(ep.database_dsn);
      ef::log::warn("bench: {}: draining: {} unsent, {} of {} marks", phase,
                    c.unsent, c.marks,
                    c.events * static_cast<long>(cfg.consumer.enabled.size()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

struct baselines {
  bench::pgbench_result api, consumer_one, consumer_batch, relay;
  int consumer_clients = 0, relay_clients = 0, batch_events = 100;
  /// The floor at each cost rate (bench/floor.hpp), in plan.cost_rates order.
  std::vector<bench::floor_figures> floors;
};

/// The floor at each of the cost phase's rates. Run before the pipeline
/// starts: NOTIFY channels are the database's, not a schema's, so a running
/// relay would wake on the floor's inserts and add its work to the floor's.
std::vector<bench::floor_figures> measure_floors(const config::settings& cfg,
                                                 const bench_plan& plan,
                                                 const std::string& pgbench,
                                                 const std::string& dsn) {
  std::vector<bench::floor_figures> out;
  if (plan.cost_seconds <= 0)
    return out;
  bench::floor_spec spec;
  spec.pgbench = pgbench;
  spec.dsn = dsn;
  spec.postmaster = bench::postmaster_of(dsn);
  spec.seconds = plan.cost_seconds;
  spec.shards = cfg.relay.shards;
  spec.consumers = cfg.consumer.enabled;
  spec.settle_s = plan.stats_settle_s;
  for (auto rate : plan.cost_rates) {
    spec.rate = rate;
    ef::log::warn("bench: the floor at {:.0f} orders/s for {} s", rate,
                  spec.seconds);
    out.push_back(bench::measure_floor(spec));
    ef::log::warn("bench: the floor at {:.0f}/s: {:.2f} ms PostgreSQL + {:.2f} "
                  "ms client per order",
                  rate, out.back().postgres_ms, out.back().client_ms);
  }
  return out;
}

baselines run_baselines(const config::settings& cfg, const bench_plan& plan,
                        const std::string& dsn) {
  baselines b;
  auto pgbench = bench::find_pgbench(cfg.database.pg_bin_dir);
  auto shards = cfg.relay.shards;
  auto seed = plan.seed_orders;
  ef::log::warn("bench: baselines: seeding {} orders into schema {}", seed,
                bench::scratch_schema);
  bench::prepare_scratch(dsn, seed, shards);
  auto scratch = bench::scratch_dsn(dsn);
  auto run = [&](const char* what, bench::pgbench_job job) {
    ef::log::warn("bench: pgbench {} (c={}{})", what, job.clients,
                  job.transactions > 0
                    ? ", t=" + std::to_string(job.transactions)
                    : ", " + std::to_string(job.seconds) + " s");
    auto r = bench::run_pgbench(pgbench, scratch, job);
    ef::log::warn("bench: pgbench {}: {:.0f} tps", what, r.tps);
    return r;
  };
  int c16 = plan.clients.empty() ? 16 : plan.clients.front();
  b.api = run("API order", {"api-order", bench::api_order_script(shards), c16,
                            2, plan.seconds, 0});
  // As many connections as EventForge's partition actors hold.
  b.consumer_clients =
    static_cast<int>(cfg.consumer.enabled.size()) * cfg.kafka.partitions;
  b.consumer_one =
    run("consumer, 1 event per transaction",
        {"consumer-1", bench::consumer_script(seed, b.consumer_clients, 1),
         b.consumer_clients, 2, plan.seconds, 0});
  b.batch_events = cfg.consumer.batch_max;
  b.consumer_batch =
    run("consumer, batch per transaction",
        {"consumer-batch",
         bench::consumer_script(seed, b.consumer_clients, b.batch_events),
         b.consumer_clients, 2, plan.seconds, 0});
  b.relay_clients = shards;
  b.relay =
    run("relay claim and mark",
        {"relay", bench::relay_script(shards, cfg.relay.batch_size), shards,
         std::min(shards, 2), 0,
         std::max(1, static_cast<int>(seed / shards / cfg.relay.batch_size))});
  bench::drop_scratch(dsn);
  b.floors = measure_floors(cfg, plan, pgbench, dsn);
  return b;
}

/// A load on the HTTP front at `url` ("http://host:port").
bench::load_spec load_at(const std::string& url) {
  bench::load_spec spec;
  auto hostport = url.substr(url.find("://") + 3);
  spec.host = hostport.substr(0, hostport.rfind(':'));
  spec.port = std::stoi(hostport.substr(hostport.rfind(':') + 1));
  return spec;
}

bench::load_result http_phase(const std::string& url, int clients, double rate,
                              int seconds, const std::string& who) {
  auto spec = load_at(url);
  spec.connections = clients;
  spec.rate = rate;
  spec.duration = std::chrono::seconds(seconds);
  spec.body = [who](long i) { return order_body(who, i); };
  auto started = clock::now();
  spec.progress = [&](long answered) {
    if (static_cast<long>(since(started)) % 5 == 0)
      ef::log::warn("bench: HTTP {}: {} orders answered", who, answered);
  };
  return bench::run_http_load(spec);
}

struct backlog_figures {
  double write_s = 0, relay_s = 0, consumers_s = 0, settle_s = 0;
  /// The relays alone (no consumer running) over the first rows of the
  /// backlog, from the first published row: their own pace.
  double alone_rows = 0, alone_s = 0;
  double peak_rss_mib = 0;
  std::vector<double> rss_mib; // every second
  bool drained = false;
};

/// Runs the relays without consumers until they published `rows` rows;
/// returns the rows they published and the seconds since the first one.
std::pair<double, double>
relays_alone(caf::actor_system& sys, const config::settings& cfg,
             const endpoints& ep, std::shared_ptr<telemetry> metrics,
             std::shared_ptr<chaos> faults, long rows, int timeout_s) {
  auto alone = cfg;
  alone.consumer.enabled.clear(); // and so no pacing either
  pipeline relays(sys, alone, metrics, std::move(faults));
  auto published0 = metrics->sum("relay_published_total");
  auto t0 = clock::now();
  relays.start(ep);
  double first = -1;
  std::uint64_t published = 0;
  while (since(t0) < timeout_s &&
         published < static_cast<std::uint64_t>(rows)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    published = metrics->sum("relay_published_total") - published0;
    if (first < 0 && published > 0)
      first = since(t0);
  }
  auto took = first < 0 ? 0 : since(t0) - first;
  relays.stop();
  return {static_cast<double>(published), took};
}

backlog_figures drain_backlog(caf::actor_system& sys,
                              const config::settings& cfg,
                              const bench_plan& plan, const endpoints& ep,
                              pipeline& pipe,
                              std::shared_ptr<telemetry> registry,
                              std::shared_ptr<chaos> faults) {
  auto& metrics = *registry;
  backlog_figures f;
  auto n = plan.backlog;
  auto write_started = clock::now();
  persistence::backlog_spec spec;
  spec.orders = n;
  spec.shards = cfg.relay.shards;
  spec.progress = [&](long written) {
    if (written % 100000 == 0 || written == n)
      ef::log::warn("bench: backlog: {} of {} orders written", written, n);
  };
  persistence::write_backlog(ep.database_dsn, spec);
  f.write_s = since(write_started);
  // The relays alone may publish as far ahead of the consumers as pacing
  // would let them (relay.max-lead-bytes per partition, at ~512 bytes a
  // record): the in-process broker keeps all of it for the consumers.
  auto lead = cfg.relay.max_lead_bytes > 0 ? cfg.relay.max_lead_bytes
              : cfg.relay.max_lead_bytes < 0
                ? kafka::lead_limit::from_retention(ep.kafka_log_bytes >= 0
                                                      ? ep.kafka_log_bytes
                                                      : std::int64_t{5} << 20)
                : std::int64_t{64} << 20;
  auto alone_rows =
    std::min<long>(n, static_cast<long>(lead * cfg.kafka.partitions / 512));
  ef::log::warn("bench: backlog: the relays alone publish {} rows", alone_rows);
  reset_peak_rss();
  auto published0 = metrics.sum("relay_published_total");
  std::tie(f.alone_rows, f.alone_s) = relays_alone(
    sys, cfg, ep, registry, std::move(faults), alone_rows, plan.timeout_s);
  auto applied0 = metrics.sum("consumer_applied_total");
  auto want = static_cast<std::uint64_t>(n) * cfg.consumer.enabled.size();
  auto t0 = clock::now();
  pipe.start(ep);
  auto next_sample = t0;
  auto next_note = t0 + std::chrono::seconds(10);
  while (since(t0) < plan.timeout_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto published = metrics.sum("relay_published_total") - published0;
    auto applied = metrics.sum("consumer_applied_total") - applied0;
    bool done = published >= static_cast<std::uint64_t>(n);
    if (f.relay_s == 0 && done)
      f.relay_s = since(t0);
    if (clock::now() >= next_sample) {
      next_sample += std::chrono::seconds(1);
      f.rss_mib.push_back(rss_mib());
    }
    if (clock::now() >= next_note) {
      next_note += std::chrono::seconds(10);
      ef::log::warn("bench: backlog: {:.0f} s: {} published, {} of {} "
                    "effects, RSS {:.0f} MiB",
                    since(t0), published, applied, want, rss_mib());
    }
    if (applied >= want) {
      f.consumers_s = since(t0);
      break;
    }
  }
  f.drained = f.consumers_s > 0 &&
              wait_drained(cfg, ep, plan.timeout_s, "backlog settle");
  f.settle_s = since(t0);
  f.peak_rss_mib = peak_rss_mib();
  return f;
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

/// Waits until every consumer applied `orders` more orders than `applied0`
/// (read from the pipeline's own counters: the wait costs no query); false
/// on timeout.
bool await_applied(const telemetry& metrics, std::uint64_t applied0,
                   long orders, std::size_t consumers, int timeout_s) {
  auto want = applied0 + static_cast<std::uint64_t>(orders) * consumers;
  auto started = clock::now();
  while (metrics.sum("consumer_applied_total") < want) {
    if (since(started) > timeout_s)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

/// (g) "lone": orders one at a time, each on a connection of its own, at
/// random gaps of 0.2-5 s (a fixed seed, so runs compare), the first right
/// after the pipeline is ready: what a user of a mostly idle system sees.
/// Spans from the database's clocks, order commit to last effect.
json lone_phase(const config::settings& cfg, const bench_plan& plan,
                const std::string& url, const std::string& dsn,
                const telemetry& metrics) {
  auto applied0 = metrics.sum("consumer_applied_total");
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> gap_s(0.2, 5.0);
  long answered = 0;
  for (int i = 0; i < plan.lone_orders; ++i) {
    if (i > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(gap_s(rng)));
    auto spec = load_at(url);
    spec.connections = 1;
    spec.rate = 1; // one request: the next would be due after the duration
    spec.duration = std::chrono::milliseconds(500);
    spec.body = [i](long) { return order_body("lone", i); };
    answered += bench::run_http_load(spec).answered_2xx;
  }
  auto consumers = cfg.consumer.enabled.size();
  if (!await_applied(metrics, applied0, answered, consumers, plan.timeout_s))
    ef::log::error("bench: lone: not every order was applied");
  auto spans =
    bench::spans_per_order(dsn, "bench-lone-%", cfg.consumer.enabled);
  std::vector<double> effect, published;
  for (auto& x : spans) {
    effect.push_back(x.last_effect_ms);
    published.push_back(x.published_ms);
  }
  json out = {{"orders", answered},
              {"measured", spans.size()},
              {"e2e_ms", effect},
              {"published_ms", published}};
  if (spans.empty())
    return out;
  out["first_ms"] = effect.front();
  out["first_published_ms"] = published.front();
  out["p50_ms"] = bench::nearest_rank(effect, 50);
  out["max_ms"] = bench::nearest_rank(effect, 100);
  out["published_p50_ms"] = bench::nearest_rank(published, 50);
  out["published_max_ms"] = bench::nearest_rank(published, 100);
  return out;
}

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

/// (f): what an order costs, at fixed rates, and what the idle pipeline
/// costs. The load generator runs in this process: its thread's own CPU and
/// context switches are taken out of the process's.
json cost_phase(const config::settings& cfg, const bench_plan& plan,
                const endpoints& ep, const std::string& url,
                const telemetry& metrics,
                const std::vector<bench::floor_figures>& floors) {
  auto& dsn = ep.database_dsn;
  json out;
  out["durability"] = bench::durability_of(dsn);
  out["statements_counted"] = bench::enable_statement_counts(dsn);
  auto pm = bench::postmaster_of(dsn);
  auto consumers = cfg.consumer.enabled.size();
  auto pg_delta = [](const std::optional<double>& a,
                     const std::optional<double>& b) -> json {
    return a && b ? json(*b - *a) : json(nullptr);
  };

  // Counters are read once the last phase's have been published (see
  // bench::stats_settle_s); a run's end is read as soon as every order was
  // applied for the processes, that long later for the database.
  auto settle = [&] {
    std::this_thread::sleep_for(std::chrono::seconds(plan.stats_settle_s));
  };
  auto sample = [&] {
    auto s = bench::sample_processes(pm);
    bench::sample_database(dsn, s);
    return s;
  };
  ef::log::warn("bench: cost: the idle pipeline for {} s", plan.idle_seconds);
  settle();
  auto i0 = sample();
  std::this_thread::sleep_for(std::chrono::seconds(plan.idle_seconds));
  auto i1 = sample();
  auto idle_s = i1.at_s - i0.at_s;
  auto pg_idle = pg_delta(i0.postgres_cpu_s, i1.postgres_cpu_s);
  out["idle"] = {
    {"seconds", idle_s},
    {"pipeline_cpu_percent_of_core",
     100 * (i1.process_cpu_s - i0.process_cpu_s) / idle_s},
    {"postgres_cpu_percent_of_core",
     pg_idle.is_null() ? json(nullptr)
                       : json(100 * pg_idle.get<double>() / idle_s)},
    {"transactions_per_s",
     static_cast<double>(i1.transactions - i0.transactions) / idle_s},
    {"threads", i1.threads}};

  json runs = json::array();
  for (auto rate : plan.cost_rates) {
    auto who = "cost" + std::to_string(static_cast<long>(rate));
    ef::log::warn("bench: cost: {:.0f} orders/s for {} s", rate,
                  plan.cost_seconds);
    // The counters are settled here: by the wait before the idle sample,
    // then by each run's wait before its end sample.
    auto applied0 = metrics.sum("consumer_applied_total");
    auto s0 = sample();
    auto load = http_phase(url, 16, rate, plan.cost_seconds, who);
    auto orders = load.answered_2xx;
    bool applied =
      await_applied(metrics, applied0, orders, consumers, plan.timeout_s);
    auto s1 = bench::sample_processes(pm);
    settle();
    bench::sample_database(dsn, s1);
    if (!applied || orders == 0) {
      ef::log::error("bench: cost: {:.0f}/s: {} orders, not all applied", rate,
                     orders);
      runs.push_back({{"rate", rate}, {"orders", orders}, {"applied", false}});
      continue;
    }
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
    auto e2e =
      bench::measure_e2e(dsn, "bench-" + who + "-%", cfg.consumer.enabled);
    json per_consumer;
    for (auto& [name, s] : e2e.consumers)
      per_consumer[name] = to_json(s);
    runs.push_back(
      {{"rate", rate},
       {"orders", orders},
       {"applied", true},
       {"orders_per_s", load.per_second()},
       {"seconds", s1.at_s - s0.at_s},
       {"cpu_ms_per_order",
        {{"total", pg_cpu.is_null()
                     ? json(nullptr)
                     : json(1000 * (pipeline_cpu + pg_cpu.get<double>()) / n)},
         {"machine_ticks", 1000 * machine_cpu / n},
         {"pipeline", 1000 * pipeline_cpu / n},
         {"postgres", pg_cpu.is_null()
                        ? json(nullptr)
                        : json(1000 * pg_cpu.get<double>() / n)}}},
       {"context_switches_per_order",
        {{"pipeline", pipeline_switches / n}, {"postgres", pg_switches}}},
       {"transactions_per_order",
        static_cast<double>(s1.transactions - s0.transactions) / n},
       {"statements_per_order", statements},
       {"rows_written_per_order",
        static_cast<double>(s1.rows_written - s0.rows_written) / n},
       {"threads", s1.threads},
       {"e2e", {{"clock", e2e.clock}, {"consumers", per_consumer}}}});
    for (auto& f : floors)
      if (f.rate == rate)
        runs.back()["floor"] = floor_json(f, runs.back()["cpu_ms_per_order"]);
  }
  out["runs"] = runs;
  return out;
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

int run_bench(const config::settings& cfg_in, const bench_plan& plan,
              caf::actor_system_config& caf_cfg) {
  auto cfg = cfg_in;
  auto started = clock::now();
  runtime rt(cfg);
  auto& ep = rt.where();
  persistence::migrate(ep.database_dsn);
  json report;
  report["machine"] = machine();
  report["plan"] = {{"seconds", plan.seconds},
                    {"clients", plan.clients},
                    {"rate", plan.rate},
                    {"backlog", plan.backlog},
                    {"seed_orders", plan.seed_orders},
                    {"cost_rates", plan.cost_rates},
                    {"cost_seconds", plan.cost_seconds},
                    {"idle_seconds", plan.idle_seconds},
                    {"lone_orders", plan.lone_orders}};
  report["embedded"] = {{"database", rt.database() != nullptr},
                        {"broker", rt.broker() != nullptr}};

  // (e) and (a): what PostgreSQL does with the same SQL, before the
  // pipeline runs, so nothing else competes for the cores.
  auto base = run_baselines(cfg, plan, ep.database_dsn);
  auto consumers = static_cast<double>(cfg.consumer.enabled.size());
  report["baselines"] = {
    {"api_order_tps", base.api.tps},
    {"api_order_clients", plan.clients.empty() ? 16 : plan.clients.front()},
    {"consumer_one_event_tps", base.consumer_one.tps},
    {"consumer_batch_events_per_s",
     base.consumer_batch.tps * base.batch_events},
    {"consumer_batch_events", base.batch_events},
    {"consumer_clients", base.consumer_clients},
    {"relay_rows_per_s", base.relay.tps * cfg.relay.batch_size},
    {"relay_clients", base.relay_clients}};

  configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  auto registry = std::make_shared<telemetry>();
  auto faults = std::make_shared<chaos>(cfg.chaos, registry);
  pipeline pipe(sys, cfg, registry, faults);
  pipe.start(ep);
  if (!await_consumers_assigned(*registry, cfg, std::chrono::seconds(60)))
    ef::log::error("bench: the consumer groups have no assignment after 60 s");

  // (g) first: its first order is the first after the pipeline is ready.
  if (plan.lone_orders > 0) {
    ef::log::warn("bench: lone: {} orders at random gaps of 0.2-5 s",
                  plan.lone_orders);
    report["lone"] =
      lone_phase(cfg, plan, pipe.url(), ep.database_dsn, *registry);
  }

  // (b): closed-loop keep-alive clients, relay and consumers running.
  json http = json::array();
  double first_rate = 0;
  for (auto c : plan.clients) {
    ef::log::warn("bench: HTTP: {} keep-alive clients for {} s", c,
                  plan.seconds);
    auto r =
      http_phase(pipe.url(), c, 0, plan.seconds, "c" + std::to_string(c));
    if (first_rate == 0)
      first_rate = r.per_second();
    auto j = to_json(r);
    j["clients"] = c;
    http.push_back(j);
    ef::log::warn("bench: HTTP {} clients: {:.0f} orders/s, p99 {:.1f} ms", c,
                  r.per_second(), r.percentile_ms(99));
    wait_drained(cfg, ep, plan.timeout_s, "after HTTP");
  }
  report["http"] = http;

  // (c): a fixed rate, latencies from the database's clocks.
  auto rate = plan.rate > 0 ? plan.rate : std::max(1.0, first_rate / 2);
  ef::log::warn("bench: latency: {:.0f} orders/s for {} s", rate, plan.seconds);
  auto lat_load = http_phase(pipe.url(), 16, rate, plan.seconds, "lat");
  wait_drained(cfg, ep, plan.timeout_s, "latency");
  auto e2e =
    bench::measure_e2e(ep.database_dsn, "bench-lat-%", cfg.consumer.enabled);
  json per_consumer;
  for (auto& [name, s] : e2e.consumers)
    per_consumer[name] = to_json(s);
  report["latency"] = {{"rate", rate},
                       {"clock", e2e.clock},
                       {"http", to_json(lat_load)},
                       {"published", to_json(e2e.published)},
                       {"consumers", per_consumer}};

  // (f) before (d): the cost of an order on a pipeline that is not working
  // off a backlog.
  if (plan.cost_seconds > 0 && !plan.cost_rates.empty()) {
    report["cost"] =
      cost_phase(cfg, plan, ep, pipe.url(), *registry, base.floors);
    wait_drained(cfg, ep, plan.timeout_s, "cost");
  }

  // (d): a backlog written while the pipeline is stopped.
  backlog_figures bl;
  if (plan.backlog > 0) {
    pipe.stop();
    bl = drain_backlog(sys, cfg, plan, ep, pipe, registry, faults);
    report["backlog"] = {
      {"orders", plan.backlog},
      {"drained", bl.drained},
      {"write_s", bl.write_s},
      {"relay_s", bl.relay_s},
      {"relay_rows_per_s",
       ratio(static_cast<double>(plan.backlog) - bl.alone_rows, bl.relay_s)},
      {"relay_alone_rows", bl.alone_rows},
      {"relay_alone_s", bl.alone_s},
      {"relay_alone_rows_per_s", ratio(bl.alone_rows, bl.alone_s)},
      {"consumers_s", bl.consumers_s},
      {"effects_per_s",
       ratio(consumers * static_cast<double>(plan.backlog), bl.consumers_s)},
      {"peak_rss_mib", bl.peak_rss_mib},
      {"rss_mib_every_s", bl.rss_mib}};
  }
  pipe.stop();

  ef::log::warn("bench: verifying");
  auto v = verify(cfg, ep.database_dsn, ep.kafka_brokers);
  auto marks_wanted = static_cast<long>(consumers) * v.counts.events;
  report["verifier"] = {{"ok", v.ok()},
                        {"violations", v.violations.size()},
                        {"orders", v.counts.orders},
                        {"events", v.counts.events},
                        {"unsent", v.counts.unsent},
                        {"marks", v.counts.marks},
                        {"effects", v.counts.effects},
                        {"lost", marks_wanted - v.counts.marks},
                        {"doubled", v.counts.effects - v.counts.marks},
                        {"duplicate_records", v.duplicates}};

  // The figures side by side.
  auto h0 = http.empty() ? json::object() : http[0];
  double http16 = h0.value("orders_per_s", 0.0);
  double effects = report.contains("backlog")
                     ? report["backlog"].value("effects_per_s", 0.0)
                     : 0.0;
  double relay = report.contains("backlog")
                   ? report["backlog"].value("relay_alone_rows_per_s", 0.0)
                   : 0.0;
  double relay_paced = report.contains("backlog")
                         ? report["backlog"].value("relay_rows_per_s", 0.0)
                         : 0.0;
  auto& bj = report["baselines"];
  report["ratios"] = {
    {"http_orders_vs_api_sql", ratio(http16, bj["api_order_tps"])},
    {"effects_vs_one_event_sql", ratio(effects, bj["consumer_one_event_tps"])},
    {"effects_vs_batched_sql",
     ratio(effects, bj["consumer_batch_events_per_s"])},
    {"relay_vs_claim_sql", ratio(relay, bj["relay_rows_per_s"])}};
  report["seconds"] = since(started);

  auto& r = report["ratios"];
  std::printf("\n%-46s %14s %26s %7s %8s\n", "figure", "EventForge",
              "same SQL under pgbench", "ratio", "target");
  auto line = [](const std::string& what, const std::string& ef,
                 const std::string& pg, double x, const char* target) {
    char rs[16] = "-";
    if (x > 0)
      std::snprintf(rs, sizeof(rs), "%.2f", x);
    std::printf("%-46s %14s %26s %7s %8s\n", what.c_str(), ef.c_str(),
                pg.c_str(), rs, target);
  };
  auto num = [](double x, const char* unit) {
    char b[48];
    std::snprintf(b, sizeof(b), "%.0f%s", x, unit);
    return std::string(b);
  };
  for (size_t i = 0; i < http.size(); ++i) {
    auto c = http[i]["clients"].get<int>();
    line("orders/s, " + std::to_string(c) + " keep-alive HTTP clients",
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
  for (auto& [name, s] : e2e.consumers) {
    char v2[64];
    std::snprintf(v2, sizeof(v2), "%.1f / %.1f ms", s.p50_ms, s.p99_ms);
    char pg[64];
    std::snprintf(pg, sizeof(pg), "published p50 %.1f ms",
                  e2e.published.p50_ms);
    line("e2e p50 / p99 at " + num(rate, "/s") + ", " + name, v2, pg, 0,
         "5 / 20");
  }
  if (plan.backlog > 0) {
    line("consumer effects/s (both), backlog", num(effects, "/s"),
         num(bj["consumer_one_event_tps"], " tps (1 event/tx, c=") +
           std::to_string(base.consumer_clients) + ")",
         r["effects_vs_one_event_sql"], ">= 3.0");
    line("", "",
         num(bj["consumer_batch_events_per_s"], " events/s (") +
           std::to_string(base.batch_events) + "/tx)",
         r["effects_vs_batched_sql"], "");
    line("relay rows/s, first backlog rows, no consumer", num(relay, "/s"),
         num(bj["relay_rows_per_s"], " rows/s (claim+mark)"),
         r["relay_vs_claim_sql"], ">= 0.6");
    line("relay rows/s, whole backlog (paced by consumers)",
         num(relay_paced, "/s"), "", 0, "");
    std::printf(
      "%-46s %14s\n",
      ("backlog of " + std::to_string(plan.backlog) + ": drained, peak RSS")
        .c_str(),
      ((bl.drained ? std::string("yes, ") : std::string("NO, ")) +
       num(bl.peak_rss_mib, " MiB"))
        .c_str());
  }
  if (report.contains("lone") && report["lone"].contains("first_ms")) {
    auto& l = report["lone"];
    char v[64];
    std::snprintf(v, sizeof(v), "%.0f / %.1f / %.1f ms",
                  l["first_ms"].get<double>(), l["p50_ms"].get<double>(),
                  l["max_ms"].get<double>());
    char pub[64];
    std::snprintf(pub, sizeof(pub), "published p50 %.1f, max %.1f",
                  l["published_p50_ms"].get<double>(),
                  l["published_max_ms"].get<double>());
    line("lone orders (" + std::to_string(l["measured"].get<size_t>()) +
           "): first / p50 / max e2e",
         v, pub, 0, "200/10/30");
  }
  if (report.contains("cost"))
    print_cost(report["cost"]);
  std::printf("%-46s %14s\n", "verifier: lost / doubled / violations",
              (std::to_string(report["verifier"]["lost"].get<long>()) + " / " +
               std::to_string(report["verifier"]["doubled"].get<long>()) +
               " / " + std::to_string(v.violations.size()))
                .c_str());
  std::printf("(latencies from %s; %.0f s in all)\n", e2e.clock.c_str(),
              since(started));
  if (!plan.report_path.empty()) {
    std::ofstream out(plan.report_path);
    out << report.dump(2) << "\n";
    if (!out)
      std::cerr << "bench: cannot write " << plan.report_path << std::endl;
  }
  if (!v.ok())
    std::cout << to_text(v, 20);
  return v.ok() && (plan.backlog == 0 || bl.drained) ? 0 : 1;
}

int run_bench(const config::settings& cfg, const bench_plan& plan) {
  caf::actor_system_config caf_cfg;
  return run_bench(cfg, plan, caf_cfg);
}

} // namespace ef::app
