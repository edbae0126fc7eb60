#include "app/tools/broker_control.hpp"

#include <poll.h>
#include <unistd.h>

#include <stdexcept>

namespace ef::app {

bool may_read_without_stopping(int fd) {
  return !::isatty(fd) || ::tcgetpgrp(fd) == ::getpgrp();
}

void serve_fault_commands(kafka::embedded_broker& cluster, int fd,
                          std::ostream& out, const std::atomic<bool>& stop,
                          bool only_in_foreground) {
  std::string pending;
  bool dropping = false; ///< inside a line that was too long
  char buf[4096];
  while (!stop) {
    // In slices, so a stop is seen without input, and a job moved to the
    // background is seen before it reads its terminal.
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, 100);
    if (ready <= 0)
      continue;
    if (only_in_foreground && !may_read_without_stopping(fd)) {
      ::usleep(100 * 1000);
      continue;
    }
    auto n = ::read(fd, buf, sizeof(buf));
    if (n <= 0)
      return; // no more commands: the broker serves on
    pending.append(buf, static_cast<size_t>(n));
    for (auto nl = pending.find('\n'); nl != std::string::npos;
         nl = pending.find('\n')) {
      auto line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (dropping) {
        dropping = false; // the rest of the long line
        continue;
      }
      if (line.find_first_not_of(" \t\r") == std::string::npos)
        continue;
      if (line.size() > max_fault_line) {
        out << "fault error: a line longer than " << max_fault_line
            << " bytes; dropped" << std::endl;
        continue;
      }
      out << cluster.run_command(line) << std::endl;
    }
    if (pending.size() > max_fault_line) {
      if (!dropping)
        out << "fault error: a line longer than " << max_fault_line
            << " bytes; dropped" << std::endl;
      dropping = true;
      pending.clear();
    }
  }
}

} // namespace ef::app
