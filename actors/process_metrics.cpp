#include "actors/process_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ef {

namespace {

prometheus::MetricFamily one(const char* name, const char* help,
                             prometheus::MetricType type, double value) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  f.metric.push_back(m);
  return f;
}

/// Seconds since the epoch at boot (/proc/stat's btime).
double boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("btime ", 0) == 0)
      return std::stod(line.substr(6));
  return 0;
}

} // namespace

std::vector<prometheus::MetricFamily> process_metrics() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line))
    return {};
  // Fields after the command name, which may hold spaces: index 0 is the
  // state, field 3 of proc(5).
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::vector<std::string> f;
  for (std::string x; rest >> x;)
    f.push_back(x);
  auto field = [&](int proc5) { return std::stod(f.at(proc5 - 3)); };
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  long fds = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++fds;
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  using prometheus::MetricType;
  return {one("process_cpu_seconds_total",
              "Total user and system CPU time spent "
              "in seconds.",
              MetricType::Counter, (field(14) + field(15)) / hz),
          one("process_resident_memory_bytes", "Resident memory size in bytes.",
              MetricType::Gauge, field(24) * page),
          one("process_virtual_memory_bytes", "Virtual memory size in bytes.",
              MetricType::Gauge, field(23)),
          one("process_open_fds", "Number of open file descriptors.",
              MetricType::Gauge, static_cast<double>(fds)),
          one("process_max_fds", "Maximum number of open file descriptors.",
              MetricType::Gauge, static_cast<double>(nofile.rlim_cur)),
          one("process_threads", "Number of OS threads in the process.",
              MetricType::Gauge, field(20)),
          one("process_start_time_seconds",
              "Start time of the process since "
              "unix epoch in seconds.",
              MetricType::Gauge, boot_time() + field(22) / hz)};
}

} // namespace ef
