// (e) and (a) of `eventforge bench`: pgbench on the pipeline's own SQL
// (the API's order, a consumer's event one by one and in batches, the
// relay's claim and mark) in a scratch schema, and the floor at each cost
// rate (bench/floor.hpp).

#include "app/tools/bench_phases.hpp"
#include "bench/cost.hpp"
#include "bench/sql_baselines.hpp"
#include <eventforge/config/logging.hpp>

#include <algorithm>

namespace ef::app::bench_run {

namespace {

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

} // namespace

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

} // namespace ef::app::bench_run
