#pragma once

#include "kafka/embedded_broker.hpp"

#include <atomic>
#include <cstddef>
#include <ostream>
#include <string>

namespace ef::app {

/// The longest fault command line: a longer one is answered with an error
/// and dropped, so input without a newline never grows without bound.
constexpr std::size_t max_fault_line = 4096;

/// True if reading `fd` cannot stop this process: it is not a terminal, or
/// this process's group is its terminal's foreground. A job started with
/// `&` in an interactive shell is stopped (SIGTTIN) when it reads its
/// terminal.
bool may_read_without_stopping(int fd);

/// The standalone broker's control surface: reads fault commands from file
/// descriptor `fd`, one per line, and writes each answer to `out`, until
/// `stop` is set or the input ends (the broker goes on serving).
/// `only_in_foreground`: a terminal is read only while this process is in
/// its foreground (stdin by default; an explicit --faults-from=- is read
/// as asked).
void serve_fault_commands(kafka::embedded_broker& cluster, int fd,
                          std::ostream& out, const std::atomic<bool>& stop,
                          bool only_in_foreground = true);

} // namespace ef::app
