#pragma once

#include <string>

namespace ef::bench {

/// One pgbench run of a custom script (`-n -M prepared`: no vacuum, no
/// standard tables, statements prepared once per connection as libpqxx's
/// prepared statements are).
struct pgbench_job {
  std::string label;  ///< names the run in errors
  std::string script; ///< the script text (SQL and backslash commands)
  int clients = 16;
  int threads = 2;
  int seconds = 0;      ///< -T; used when transactions is 0
  int transactions = 0; ///< -t, per client
  double rate = 0;      ///< -R, script runs per second in all; 0: unthrottled
};

struct pgbench_result {
  double tps = 0; ///< script runs per second, without connection time
  long transactions = 0;
  double latency_avg_ms = 0;
};

/// pgbench next to the PostgreSQL server binaries in `bin_dir`, else the one
/// on PATH. Throws std::runtime_error when there is none.
std::string find_pgbench(const std::string& bin_dir);

/// Runs `job` against `dsn` and parses pgbench's summary. Throws
/// std::runtime_error with pgbench's own last lines when it fails.
pgbench_result run_pgbench(const std::string& pgbench, const std::string& dsn,
                           const pgbench_job& job);

} // namespace ef::bench
