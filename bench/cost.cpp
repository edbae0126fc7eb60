#include "bench/cost.hpp"

#include <eventforge/config/logging.hpp>

#include <pqxx/pqxx>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace ef::bench {

namespace {

double ticks_to_s(long long ticks) {
  static const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return static_cast<double>(ticks) / hz;
}

/// Fields of /proc/PID/stat after the command name (which may hold spaces
/// and parentheses, so the split starts after its last ')'): index 0 is the
/// state, field 3 of proc(5), so field N of proc(5) is index N - 3.
std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line))
    return {};
  auto close = line.rfind(')');
  if (close == std::string::npos)
    return {};
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> out;
  for (std::string f; rest >> f;)
    out.push_back(f);
  return out;
}

long long field(const std::vector<std::string>& f, int proc5_index) {
  auto i = static_cast<std::size_t>(proc5_index - 3);
  return i < f.size() ? std::stoll(f[i]) : 0;
}

long switches_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  long total = 0;
  for (std::string line; std::getline(in, line);)
    if (line.find("ctxt_switches:") != std::string::npos)
      total += std::stol(line.substr(line.find(':') + 1));
  return total;
}

double machine_busy_s() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0,
            softirq = 0, steal = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >>
    steal;
  return ticks_to_s(user + nice + system + irq + softirq + steal);
}

long threads_of_self() {
  std::error_code ec;
  long n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

/// The postmaster's own time, its reaped children's (cutime, cstime), and
/// its live children's; their context switches (live processes only).
void add_postgres(pid_t postmaster, cost_sample& s) {
  auto pm = stat_fields(postmaster);
  if (pm.empty())
    return;
  long long ticks =
    field(pm, 14) + field(pm, 15) + field(pm, 16) + field(pm, 17);
  long switches = switches_of(postmaster);
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    auto name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != name.npos)
      continue;
    auto pid = static_cast<pid_t>(std::stol(name));
    auto f = stat_fields(pid);
    if (f.empty() || field(f, 4) != postmaster)
      continue;
    ticks += field(f, 14) + field(f, 15);
    switches += switches_of(pid);
  }
  s.postgres_cpu_s = ticks_to_s(ticks);
  s.postgres_switches = switches;
}

} // namespace

cost_sample sample_processes(pid_t postmaster) {
  cost_sample s;
  s.at_s = std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
             .count();
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  auto tv = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6;
  };
  s.process_cpu_s = tv(self.ru_utime) + tv(self.ru_stime);
  s.process_switches = self.ru_nvcsw + self.ru_nivcsw;
  s.machine_busy_s = machine_busy_s();
  s.threads = threads_of_self();
  if (postmaster > 0)
    add_postgres(postmaster, s);
  return s;
}

void sample_database(const std::string& dsn, cost_sample& s) {
  pqxx::connection c(dsn);
  pqxx::nontransaction tx(c);
  auto r = tx.exec("SELECT xact_commit + xact_rollback, tup_inserted + "
                   "tup_updated + tup_deleted FROM pg_stat_database WHERE "
                   "datname = current_database()");
  s.transactions = r[0][0].as<long>();
  s.rows_written = r[0][1].as<long>();
  auto has = tx.exec("SELECT 1 FROM pg_extension WHERE extname = "
                     "'pg_stat_statements'");
  if (!has.empty())
    s.statements =
      tx.exec("SELECT coalesce(sum(calls), 0)::bigint FROM "
              "pg_stat_statements WHERE dbid = (SELECT oid FROM "
              "pg_database WHERE datname = current_database())")[0][0]
        .as<long>();
}

bool enable_statement_counts(const std::string& dsn) {
  try {
    pqxx::connection c(dsn);
    pqxx::nontransaction tx(c);
    auto preload =
      tx.exec("SHOW shared_preload_libraries")[0][0].as<std::string>();
    if (preload.find("pg_stat_statements") == std::string::npos)
      return false;
    tx.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    return true;
  } catch (const std::exception& e) {
    ef::log::warn("bench: statements will not be counted: {}", e.what());
    return false;
  }
}

std::string durability_of(const std::string& dsn) {
  pqxx::connection c(dsn);
  pqxx::nontransaction tx(c);
  auto r = tx.exec("SELECT current_setting('fsync'), "
                   "current_setting('synchronous_commit')");
  return "fsync=" + r[0][0].as<std::string>() +
         ", synchronous_commit=" + r[0][1].as<std::string>();
}

pid_t postmaster_of(const std::string& dsn) {
  pqxx::connection c(dsn);
  pqxx::nontransaction tx(c);
  auto backend = tx.exec("SELECT pg_backend_pid()")[0][0].as<long>();
  std::ifstream comm("/proc/" + std::to_string(backend) + "/comm");
  std::string name;
  if (!std::getline(comm, name) || name != "postgres")
    return 0; // another machine's server, or a PID we may not read
  auto f = stat_fields(static_cast<pid_t>(backend));
  return f.empty() ? 0 : static_cast<pid_t>(field(f, 4));
}

} // namespace ef::bench
