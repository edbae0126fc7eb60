#include "bench/pgbench.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>
#include <vector>

namespace ef::bench {

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s)
    out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

/// pgbench's error lines (the first few), else its last lines.
std::string errors_of(const std::string& text) {
  std::stringstream in(text);
  std::vector<std::string> errors, last;
  for (std::string line; std::getline(in, line);) {
    if (line.find("error") != std::string::npos ||
        line.find("ERROR") != std::string::npos)
      errors.push_back(line);
    last.push_back(line);
  }
  auto& pick = errors.empty() ? last : errors;
  std::string out;
  auto from = errors.empty() && pick.size() > 6 ? pick.size() - 6 : 0;
  for (auto i = from; i < pick.size() && i < from + 6; ++i)
    out += "\n  " + pick[i];
  return out;
}

double number_after(const std::string& text, const std::string& label) {
  auto at = text.find(label);
  if (at == std::string::npos)
    return -1;
  return std::strtod(text.c_str() + at + label.size(), nullptr);
}

} // namespace

std::string find_pgbench(const std::string& bin_dir) {
  namespace fs = std::filesystem;
  if (!bin_dir.empty() && fs::exists(bin_dir + "/pgbench"))
    return bin_dir + "/pgbench";
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty() && fs::exists(dir + "/pgbench"))
        return dir + "/pgbench";
  }
  throw std::runtime_error("pgbench not found in " + bin_dir +
                           " nor on PATH (Debian: apt-get install "
                           "postgresql-15, which bench needs anyway)");
}

namespace {

/// pgbench's exit status and everything it printed.
struct pgbench_run {
  int status = -1;
  std::string output;
};

pgbench_run run_once(const std::string& pgbench, const std::string& dsn,
                     const pgbench_job& job) {
  // temp_directory_path() honours TMPDIR.
  auto dir = std::filesystem::temp_directory_path().string();
  std::string templ = dir + "/eventforge-pgbench-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  if (fd < 0)
    throw std::runtime_error("pgbench " + job.label +
                             ": cannot create a script file in " + dir);
  close(fd);
  std::string path(buf.data());
  {
    std::ofstream out(path);
    out << job.script;
  }
  std::string cmd =
    shell_quote(pgbench) + " -n -M prepared -c " + std::to_string(job.clients) +
    " -j " + std::to_string(job.threads) +
    (job.transactions > 0 ? " -t " + std::to_string(job.transactions)
                          : " -T " + std::to_string(job.seconds)) +
    (job.rate > 0 ? " -R " + std::to_string(job.rate) : "") + " -f " +
    shell_quote(path) + " " + shell_quote(dsn) + " 2>&1";
  pgbench_run run;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
      run.output.append(chunk, n);
    run.status = pclose(p);
  }
  std::remove(path.c_str());
  return run;
}

} // namespace

pgbench_result run_pgbench(const std::string& pgbench, const std::string& dsn,
                           const pgbench_job& job) {
  auto attempt = job;
  for (int tries = 1;; ++tries) {
    auto run = run_once(pgbench, dsn, attempt);
    pgbench_result r;
    r.tps = number_after(run.output, "tps = ");
    r.transactions = static_cast<long>(
      number_after(run.output, "number of transactions actually processed: "));
    r.latency_avg_ms = number_after(run.output, "latency average = ");
    bool failed =
      number_after(run.output, "number of failed transactions: ") > 0;
    // A timed run on a busy machine can spend its whole duration connecting
    // its clients and process nothing (then pgbench prints no tps): that
    // measured nothing, so it runs again, twice as long, at most twice more.
    bool measured_nothing = run.status == 0 && !failed && r.transactions == 0;
    if (measured_nothing && attempt.transactions == 0 && tries < 3) {
      attempt.seconds = std::max(1, attempt.seconds) * 2;
      continue;
    }
    if (run.status != 0 || r.tps < 0 || failed)
      throw std::runtime_error("pgbench " + job.label + " failed (exit " +
                               std::to_string(WEXITSTATUS(run.status)) + ")" +
                               (measured_nothing
                                  ? " after " + std::to_string(tries) +
                                      " runs that processed no transaction"
                                  : "") +
                               ":" + errors_of(run.output));
    return r;
  }
}

} // namespace ef::bench
