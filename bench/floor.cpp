#include "bench/floor.hpp"

#include "bench/cost.hpp"
#include "bench/pgbench.hpp"
#include "bench/sql_baselines.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace ef::bench {

namespace {

/// CPU of every child this process has waited for (pgbench, through the
/// shell popen() runs it in), in seconds.
double children_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

} // namespace

floor_figures measure_floor(const floor_spec& spec) {
  floor_figures f;
  f.rate = spec.rate;
  f.clients = std::max(1, std::min(4, spec.shards));
  // No seeded rows: each client claims the row it just wrote.
  prepare_scratch(spec.dsn, 0, spec.shards);
  auto scratch = scratch_dsn(spec.dsn);
  pgbench_job job{"floor",      floor_script(spec.shards, spec.consumers),
                  f.clients,    1,
                  spec.seconds, 0};
  job.rate = spec.rate;
  auto s0 = sample_processes(spec.postmaster);
  sample_database(spec.dsn, s0);
  auto c0 = children_cpu_s();
  auto r = run_pgbench(spec.pgbench, scratch, job);
  auto c1 = children_cpu_s();
  auto s1 = sample_processes(spec.postmaster);
  // The backends' counters reach pg_stat_database within 10 s of idling.
  std::this_thread::sleep_for(std::chrono::seconds(spec.settle_s));
  sample_database(spec.dsn, s1);
  drop_scratch(spec.dsn);
  f.orders = r.transactions;
  if (f.orders <= 0)
    return f;
  auto n = static_cast<double>(f.orders);
  f.client_ms = 1000 * (c1 - c0) / n;
  if (s0.postgres_cpu_s && s1.postgres_cpu_s)
    f.postgres_ms = 1000 * (*s1.postgres_cpu_s - *s0.postgres_cpu_s) / n;
  f.transactions = static_cast<double>(s1.transactions - s0.transactions) / n;
  return f;
}

} // namespace ef::bench
