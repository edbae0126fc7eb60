#include "bench/pgbench.hpp"

#include <sys/wait.h>

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

pgbench_result run_pgbench(const std::string& pgbench, const std::string& dsn,
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
    " -f " + shell_quote(path) + " " + shell_quote(dsn) + " 2>&1";
  std::string output;
  int status = -1;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
      output.append(buf, n);
    status = pclose(p);
  }
  std::remove(path.c_str());
  pgbench_result r;
  r.tps = number_after(output, "tps = ");
  r.transactions = static_cast<long>(
    number_after(output, "number of transactions actually processed: "));
  r.latency_avg_ms = number_after(output, "latency average = ");
  bool failed = number_after(output, "number of failed transactions: ") > 0;
  if (status != 0 || r.tps < 0 || failed)
    throw std::runtime_error("pgbench " + job.label + " failed (exit " +
                             std::to_string(WEXITSTATUS(status)) +
                             "):" + errors_of(output));
  return r;
}

} // namespace ef::bench
