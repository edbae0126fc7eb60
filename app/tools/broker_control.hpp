#pragma once

#include "kafka/embedded_broker.hpp"

#include <atomic>
#include <ostream>
#include <string>

namespace ef::app {

/// Runs one fault command line (kafka::parse_fault) against the cluster and
/// answers it in one line: "fault ok: <what it did>" or "fault error:
/// <why>"; an error changes nothing.
std::string run_fault_command(kafka::embedded_broker& cluster,
                              const std::string& line);

/// The standalone broker's control surface: reads fault commands from file
/// descriptor `fd` (stdin), one per line, and writes each answer to `out`,
/// until `stop` is set or the input ends (the broker goes on serving).
void serve_fault_commands(kafka::embedded_broker& cluster, int fd,
                          std::ostream& out, const std::atomic<bool>& stop);

} // namespace ef::app
