#include "app/tools/broker_control.hpp"

#include <poll.h>
#include <unistd.h>

#include <stdexcept>

namespace ef::app {

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
      out << cluster.run_command(line) << std::endl;
    }
  }
}

} // namespace ef::app
