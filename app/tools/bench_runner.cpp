// `eventforge bench`: every phase in the same process against the same
// database and broker, so the ratios compare like with like. The order of
// the phases matters and is explained where they run; the phases
// themselves are in the files bench_phases.hpp names.

#include "app/tools/bench_runner.hpp"

#include "app/tools/bench_phases.hpp"
#include "persistence/migrations.hpp"
#include <eventforge/actors/applied.hpp>
#include <eventforge/config/logging.hpp>
#include <eventforge/embedded/runtime.hpp>

#include <sys/utsname.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <thread>

namespace ef::app {

namespace {

using namespace bench_run;

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

json plan_json(const bench_plan& plan) {
  return {{"seconds", plan.seconds},
          {"clients", plan.clients},
          {"rate", plan.rate},
          {"backlog", plan.backlog},
          {"seed_orders", plan.seed_orders},
          {"cost_rates", plan.cost_rates},
          {"cost_seconds", plan.cost_seconds},
          {"idle_seconds", plan.idle_seconds},
          {"lone_orders", plan.lone_orders}};
}

json baselines_json(const config::settings& cfg, const bench_plan& plan,
                    const baselines& base) {
  return {
    {"api_order_tps", base.api.tps},
    {"api_order_clients", plan.clients.empty() ? 16 : plan.clients.front()},
    {"consumer_one_event_tps", base.consumer_one.tps},
    {"consumer_batch_events_per_s",
     base.consumer_batch.tps * base.batch_events},
    {"consumer_batch_events", base.batch_events},
    {"consumer_clients", base.consumer_clients},
    {"relay_rows_per_s", base.relay.tps * cfg.relay.batch_size},
    {"relay_clients", base.relay_clients}};
}

json backlog_json(const bench_plan& plan, const backlog_figures& bl,
                  double consumers) {
  return {
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

json verifier_json(const verification& v, double consumers) {
  auto marks_wanted = static_cast<long>(consumers) * v.counts.events;
  return {{"ok", v.ok()},
          {"violations", v.violations.size()},
          {"orders", v.counts.orders},
          {"events", v.counts.events},
          {"unsent", v.counts.unsent},
          {"marks", v.counts.marks},
          {"effects", v.counts.effects},
          {"lost", marks_wanted - v.counts.marks},
          {"doubled", v.counts.effects - v.counts.marks},
          {"duplicate_records", v.duplicates}};
}

/// The figures over their baselines: HTTP orders over the API's SQL, the
/// consumers' effects over their SQL one by one and batched, the relays
/// alone over their claim and mark.
json ratios_json(const json& report) {
  auto& http = report["http"];
  auto h0 = http.empty() ? json::object() : http[0];
  double http16 = h0.value("orders_per_s", 0.0);
  auto backlog = [&](const char* key) {
    return report.contains("backlog") ? report["backlog"].value(key, 0.0) : 0.0;
  };
  double effects = backlog("effects_per_s");
  auto& bj = report["baselines"];
  return {
    {"http_orders_vs_api_sql", ratio(http16, bj["api_order_tps"])},
    {"effects_vs_one_event_sql", ratio(effects, bj["consumer_one_event_tps"])},
    {"effects_vs_batched_sql",
     ratio(effects, bj["consumer_batch_events_per_s"])},
    {"relay_vs_claim_sql",
     ratio(backlog("relay_alone_rows_per_s"), bj["relay_rows_per_s"])}};
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
  report["plan"] = plan_json(plan);
  report["embedded"] = {{"database", rt.hosts_database()},
                        {"broker", rt.hosts_broker()}};

  // (e) and (a): what PostgreSQL does with the same SQL, before the
  // pipeline runs, so nothing else competes for the cores.
  auto base = run_baselines(cfg, plan, ep.database_dsn);
  auto consumers = static_cast<double>(cfg.consumer.enabled.size());
  report["baselines"] = baselines_json(cfg, plan, base);

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
  report["http"] = throughput_phases(cfg, plan, ep, pipe.url());

  // (c): a fixed rate, by default half of what the first (b) phase reached.
  double first_rate =
    report["http"].empty() ? 0 : report["http"][0].value("orders_per_s", 0.0);
  auto rate = plan.rate > 0 ? plan.rate : std::max(1.0, first_rate / 2);
  auto latency = latency_phase(cfg, plan, ep, pipe.url(), rate, report);

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
    report["backlog"] = backlog_json(plan, bl, consumers);
  }
  pipe.stop();

  ef::log::warn("bench: verifying");
  auto v = verify(cfg, ep.database_dsn, ep.kafka_brokers);
  report["verifier"] = verifier_json(v, consumers);
  report["ratios"] = ratios_json(report);
  report["seconds"] = since(started);
  print_summary(report, plan, base, latency, bl, v, started);
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
