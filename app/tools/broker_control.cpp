#include "app/tools/broker_control.hpp"

#include <poll.h>
#include <unistd.h>

#include <stdexcept>

namespace ef::app {

std::string run_fault_command(kafka::embedded_broker& cluster,
                              const std::string& line) {
  auto parsed = kafka::parse_fault(line);
  if (auto* why = std::get_if<std::string>(&parsed))
    return "fault error: " + *why;
  try {
    return "fault ok: " + cluster.apply(std::get<kafka::broker_fault>(parsed));
  } catch (const std::exception& e) {
    return "fault error: " + std::string(e.what());
  }
}

void serve_fault_commands(kafka::embedded_broker& cluster, int fd,
                          std::ostream& out, const std::atomic<bool>& stop) {
  std::string pending;
  char buf[4096];
  while (!stop) {
    // In slices, so a stop is seen without input.
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, 100);
    if (ready <= 0)
      continue;
    auto n = ::read(fd, buf, sizeof(buf));
    if (n <= 0)
      return; // no more commands: the broker serves on
    pending.append(buf, static_cast<size_t>(n));
    for (auto nl = pending.find('\n'); nl != std::string::npos;
         nl = pending.find('\n')) {
      auto line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.find_first_not_of(" \t\r") == std::string::npos)
        continue;
      out << run_fault_command(cluster, line) << std::endl;
    }
  }
}

} // namespace ef::app
