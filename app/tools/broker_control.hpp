#pragma once

#include "kafka/embedded_broker.hpp"

#include <atomic>
#include <ostream>
#include <string>

namespace ef::app {

/// The standalone broker's control surface: reads fault commands from file
/// descriptor `fd` (stdin), one per line, and writes each answer to `out`,
/// until `stop` is set or the input ends (the broker goes on serving).
void serve_fault_commands(kafka::embedded_broker& cluster, int fd,
                          std::ostream& out, const std::atomic<bool>& stop);

} // namespace ef::app
