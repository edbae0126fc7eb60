#pragma once

// What `serve` tells the service manager that started it (systemd,
// Type=notify; deploy/systemd/eventforge.service): that it is ready, that
// it is stopping, and what it is doing. Nothing is sent when the process was
// not started with a notification socket (NOTIFY_SOCKET), or when the build
// found no libsystemd (the configure output says so).

#include <string>

namespace ef::app::service {

/// READY=1 with `status` as STATUS=: the moment `serve` prints its ready
/// line, so `systemctl start` returns once orders are taken.
void notify_ready(const std::string& status);

/// STOPPING=1 with `status`: the drain has begun.
void notify_stopping(const std::string& status);

/// STATUS= alone: what `systemctl status` shows beside the unit's state.
void notify_status(const std::string& status);

} // namespace ef::app::service
