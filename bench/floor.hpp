#pragma once

// The floor an order's cost is measured against: PostgreSQL doing that
// order's durable work with EventForge's own statements and no pipeline
// (bench::floor_script), driven by pgbench at a fixed rate on the same
// cluster. Batching can go below it (one transaction for many orders);
// anything else an implementation adds (threads, wake-ups, polls, extra
// statements) only goes above it.

#include <string>
#include <sys/types.h>
#include <vector>

namespace ef::bench {

struct floor_spec {
  std::string pgbench;  ///< find_pgbench()
  std::string dsn;      ///< the database (the scratch schema is made here)
  pid_t postmaster = 0; ///< postmaster_of(dsn); 0: PostgreSQL's CPU unknown
  double rate = 100;    ///< orders/s (pgbench -R)
  int seconds = 20;     ///< pgbench -T
  int shards = 4;       ///< outbox shards: clients = min(4, shards)
  std::vector<std::string> consumers; ///< one transaction each per order
  /// Seconds before the database's counters are read after the run
  /// (bench_plan::stats_settle_s: idle backends publish theirs within 10 s).
  int settle_s = 11;
};

/// CPU per order of the floor, in milliseconds.
struct floor_figures {
  double rate = 0;
  long orders = 0;
  int clients = 0;
  double postgres_ms = -1; ///< the server's processes; -1: unknown
  double client_ms = 0;    ///< pgbench (the client doing the pipeline's job)
  double transactions = 0; ///< per order, from pg_stat_database
  double total_ms() const {
    return postgres_ms < 0 ? -1 : postgres_ms + client_ms;
  }
};

/// Runs the floor once in a scratch schema of its own (dropped after).
/// Throws std::runtime_error when pgbench fails, db_error on the database.
floor_figures measure_floor(const floor_spec& spec);

} // namespace ef::bench
