#pragma once

// What an order costs: CPU, context switches, database transactions,
// statements and rows, read from the kernel's and PostgreSQL's own counters
// before and after a phase. The bench runs the pipeline in its own process,
// so "this process" is the pipeline plus the load generator, whose thread
// reports its own CPU (load_result) for the bench to subtract.

#include <optional>
#include <string>
#include <sys/types.h>

namespace ef::bench {

/// Cumulative counters at one instant; a phase's cost is the difference of
/// two samples.
struct cost_sample {
  double at_s = 0;           ///< steady clock
  double process_cpu_s = 0;  ///< user + system, every thread ever run here
  long process_switches = 0; ///< voluntary + involuntary, every thread
  /// Machine-wide busy time (all cores, /proc/stat minus idle and iowait).
  double machine_busy_s = 0;
  /// The PostgreSQL server's processes: the postmaster, its live children,
  /// and the children it has reaped (cutime/cstime). Empty when the server
  /// is not a child of this machine's postmaster we know (a remote URL).
  std::optional<double> postgres_cpu_s;
  /// Live server processes only: a backend that exited took its count along.
  std::optional<long> postgres_switches;
  long transactions = 0; ///< pg_stat_database: commits + rollbacks
  long rows_written = 0; ///< pg_stat_database: inserted + updated + deleted
  /// pg_stat_statements' calls (every statement, BEGIN and COMMIT too);
  /// empty when the extension cannot be loaded.
  std::optional<long> statements;
  long threads = 0; ///< threads of this process now
};

/// Samples the processes: this one and the server's. `postmaster` is the
/// server's PID (0: unknown).
cost_sample sample_processes(pid_t postmaster);

/// Adds the database's counters of `dsn` to `s`. PostgreSQL 15 backends
/// publish their counters at most once a second while busy and within 10 s
/// once idle, so a phase's end is read 11 s after its last transaction
/// (bench_plan::stats_settle_s).
void sample_database(const std::string& dsn, cost_sample& s);

/// Creates pg_stat_statements in `dsn` if the server has it preloaded;
/// returns whether statements can be counted.
bool enable_statement_counts(const std::string& dsn);

/// The durability settings the server runs with ("fsync=on,
/// synchronous_commit=on"), as the bench reports them next to its figures.
std::string durability_of(const std::string& dsn);

/// The PID of the server behind `dsn` if it runs on this machine (the
/// parent of this connection's backend, a process named "postgres"); 0 if
/// it cannot be seen from here.
pid_t postmaster_of(const std::string& dsn);

} // namespace ef::bench
