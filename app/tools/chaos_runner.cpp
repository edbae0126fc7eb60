// `eventforge chaos`: the pipeline under injected crashes while clients
// place orders, with, if asked, a backlog written first, the in-process
// broker replaced by an empty one, or Kafka faults at their points of the
// drive; then quiescence, the verifier and the report (docs/chaos.md).
// Its clients are in chaos_client, what it does to the broker in
// chaos_broker, its report in chaos_report.

#include "app/tools/chaos_runner.hpp"

#include "app/tools/chaos_broker.hpp"
#include "app/tools/chaos_report.hpp"
#include "app/tools/fault_schedule.hpp"
#include "persistence/backlog_writer.hpp"
#include "persistence/invariant_queries.hpp"
#include "persistence/migrations.hpp"
#include <eventforge/actors/applied.hpp>
#include <eventforge/config/logging.hpp>
#include <eventforge/embedded/runtime.hpp>

#include <caf/all.hpp>

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

namespace ef::app {

namespace {

using namespace chaos_run;
using clock = std::chrono::steady_clock;
using json = nlohmann::json;

/// Why the plan's broker faults cannot run (checked before anything
/// starts: a bad argument changes nothing); expands `kinds` ("all").
std::optional<std::string>
refuse_broker_faults(const config::settings& cfg, const chaos_plan& plan,
                     std::vector<std::string>& kinds) {
  if (kinds.empty())
    return std::nullopt;
  if (!cfg.kafka.brokers.empty())
    return "--broker-faults needs the in-process broker (leave "
           "kafka.brokers empty; fail a real cluster with its own tools)";
  if (plan.broker_restarts > 0)
    return "--broker-faults and --broker-restarts are separate runs";
  return expand_fault_kinds(kinds, cfg.kafka.embedded_brokers);
}

/// Seconds of each phase of the run, by name, for the report.
struct phase_clock {
  json seconds = json::object();
  clock::time_point started = clock::now();

  void end(const char* name) {
    seconds[name] =
      std::chrono::duration<double>(clock::now() - started).count();
    started = clock::now();
  }
};

/// The tree's parts a run drives, and how far its clients are.
struct run_context {
  const config::settings& cfg;
  const chaos_plan& plan;
  caf::actor_system& sys;
  runtime& rt;
  std::shared_ptr<telemetry> registry;
  std::shared_ptr<chaos> faults;
  phase_clock phases;

  /// Writes plan.backlog orders straight into the outbox; past retention,
  /// the relays alone publish all of it while no consumer runs, so the
  /// broker keeps only its last few MiB per partition.
  void write_backlog() {
    persistence::backlog_spec spec;
    spec.orders = plan.backlog;
    spec.shards = cfg.relay.shards;
    spec.traceparent = [&](long i) { return trace_of(cfg.chaos.seed, 2, i); };
    spec.progress = [&](long n) {
      if (n % 100000 == 0 || n == plan.backlog)
        ef::log::warn("chaos: backlog {} of {} orders written", n,
                      plan.backlog);
    };
    persistence::write_backlog(rt.where().database_dsn, spec);
    phases.end("backlog_write");
    if (!plan.backlog_past_retention)
      return;
    auto down = cfg;
    down.consumer.enabled.clear();
    pipeline relays_only(sys, down, registry, faults);
    relays_only.start(rt.where());
    while (outbox_unsent(rt.where().database_dsn) > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    relays_only.stop();
    phases.end("backlog_publish_without_consumers");
  }
};

/// Waits until every event is applied and committed, or the plan's
/// timeout after the drive; true if it is.
bool settle(const run_context& run, clock::time_point driven) {
  auto& cfg = run.cfg;
  auto deadline = driven + std::chrono::seconds(run.plan.timeout_s);
  bool settled = false;
  auto next_progress = clock::now() + std::chrono::seconds(5);
  while (!(settled = applied_gap(cfg, run.rt.where()).empty()) &&
         clock::now() < deadline) {
    // Counting big tables is not free: look less often once it takes long.
    std::this_thread::sleep_for(std::chrono::milliseconds(
      clock::now() - driven < std::chrono::seconds(10) ? 200 : 1000));
    if (clock::now() > next_progress) {
      next_progress = clock::now() + std::chrono::seconds(5);
      auto c = persistence::read_counts(run.rt.where().database_dsn);
      ef::log::warn("chaos: settling: {} events, {} unsent, {} marks of {}",
                    c.events, c.unsent, c.marks,
                    c.events * static_cast<long>(cfg.consumer.enabled.size()));
    }
  }
  return settled;
}

/// Drives the orders on a running pipeline while the broker is restarted
/// or failed as planned; returns when the clients are done.
void drive_under_faults(run_context& run, pipeline& pipe,
                        const std::vector<std::string>& fault_kinds,
                        drive_stats& stats, chaos_outcome& out) {
  std::atomic<bool> driving{true};
  std::atomic<bool> stop_driving{false};
  std::thread driver([&] {
    drive(pipe, run.cfg, run.plan, stop_driving, stats);
    driving = false;
  });
  // Whatever leaves this scope, the driver is told to stop and joined: a
  // joinable thread destroyed by an exception would abort the process and
  // hide the exception (known gap 12 of the second round).
  struct join_driver {
    std::atomic<bool>& stop;
    std::thread& t;
    ~join_driver() {
      stop = true;
      if (t.joinable())
        t.join();
    }
  } joiner{stop_driving, driver};
  out.broker_restarts =
    restart_broker_while_driving(run.rt, run.plan, pipe, driving, stats);
  inject_kafka_faults(run.rt, run.cfg, run.plan, fault_kinds, driving, stats,
                      out);
  driver.join();
}

} // namespace

int run_chaos(const config::settings& cfg, const chaos_plan& plan,
              caf::actor_system_config& caf_cfg) {
  auto started = clock::now();
  auto fault_kinds = plan.broker_faults;
  if (auto refusal = refuse_broker_faults(cfg, plan, fault_kinds)) {
    std::cerr << "chaos: " << *refusal << std::endl;
    return 2;
  }
  runtime rt(cfg);
  if ((plan.broker_restarts > 0 || plan.backlog_past_retention) &&
      !rt.hosts_broker()) {
    std::cerr << "chaos: --broker-restarts and --backlog-past-retention need "
                 "the in-process broker (leave kafka.brokers empty)"
              << std::endl;
    return 2;
  }
  configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  auto registry = std::make_shared<telemetry>();
  auto faults = std::make_shared<chaos>(cfg.chaos, registry);
  ef::log::warn("chaos: {} orders, concurrency {}, points [{}], rate {}, "
                "seed {}, broker restarts {}, backlog {}{}",
                plan.orders, plan.concurrency, cfg.chaos.points.size(),
                cfg.chaos.rate, cfg.chaos.seed, plan.broker_restarts,
                plan.backlog,
                plan.backlog_past_retention ? " (past retention)" : "");
  run_context run{cfg, plan, sys, rt, registry, faults, {}};
  persistence::migrate(rt.where().database_dsn);
  if (plan.backlog > 0)
    run.write_backlog();

  pipeline pipe(sys, cfg, registry, faults);
  pipe.start(rt.where());
  drive_stats stats;
  chaos_outcome out;
  out.clients = &stats;
  drive_under_faults(run, pipe, fault_kinds, stats, out);
  auto driven = clock::now();
  run.phases.end("drive");
  out.settled = settle(run, driven);
  auto settled_at = clock::now();
  run.phases.end("settle");

  out.metrics = counters(sys, pipe.root());
  out.peak_rss_mib = peak_rss_mib(); // the pipeline's, before the verifier
  pipe.stop();
  out.result = verify(cfg, rt.where().database_dsn, rt.where().kafka_brokers);
  out.repairs = persistence::repair_store(rt.where().database_dsn).summary();
  out.crashed = faults->injected();
  out.phases_seconds = run.phases.seconds;
  auto secs = [](clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  out.seconds = {{"drive", secs(driven - started)},
                 {"settle", secs(settled_at - driven)},
                 {"total", secs(clock::now() - started)}};
  auto report = chaos_report(cfg, plan, out);
  print_chaos_report(report, out);
  if (!plan.report_file.empty())
    std::ofstream(plan.report_file) << report.dump(2) << "\n";
  return out.ok() ? 0 : 1;
}

int run_chaos(const config::settings& cfg, const chaos_plan& plan) {
  caf::actor_system_config caf_cfg;
  return run_chaos(cfg, plan, caf_cfg);
}

} // namespace ef::app
