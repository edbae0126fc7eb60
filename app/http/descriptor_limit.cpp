// Whether http.max-connections fits in the process's descriptor limit.

#include "app/http/descriptor_limit.hpp"

#include <eventforge/config/logging.hpp>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <sys/resource.h>

namespace ef::app::http {

namespace {

/// Descriptors the process holds now (its open files, sockets and pipes).
long open_descriptors() {
  long n = 0;
  std::error_code ec;
  for (auto i = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && i != std::filesystem::directory_iterator(); i.increment(ec))
    ++n;
  return n;
}

/// Descriptors kept free for what the process opens after start: database
/// reconnections, Kafka clients of the overview, the journal, log files.
constexpr long descriptor_headroom = 64;

} // namespace

void check_descriptor_limit(int max_connections) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return;
  auto held = open_descriptors();
  auto needed =
    static_cast<rlim_t>(max_connections + held + descriptor_headroom);
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < needed) {
    auto raised = lim;
    raised.rlim_cur = lim.rlim_max == RLIM_INFINITY
                        ? needed
                        : std::min<rlim_t>(needed, lim.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0 && raised.rlim_cur >= needed) {
      ef::log::info("http: raised RLIMIT_NOFILE from {} to {} for "
                    "http.max-connections {}",
                    lim.rlim_cur, raised.rlim_cur, max_connections);
      return;
    }
    throw std::runtime_error(
      "http.max-connections (" + std::to_string(max_connections) + ") plus " +
      std::to_string(held) + " descriptors already open plus " +
      std::to_string(descriptor_headroom) +
      " kept free exceeds RLIMIT_NOFILE (" + std::to_string(lim.rlim_cur) +
      ", hard limit " +
      (lim.rlim_max == RLIM_INFINITY ? std::string("unlimited")
                                     : std::to_string(lim.rlim_max)) +
      "): lower http.max-connections to at most " +
      std::to_string(std::max<long>(
        0, static_cast<long>(lim.rlim_max == RLIM_INFINITY ? lim.rlim_cur
                                                           : lim.rlim_max) -
             held - descriptor_headroom)) +
      " or raise the limit (ulimit -n)");
  }
}

} // namespace ef::app::http
