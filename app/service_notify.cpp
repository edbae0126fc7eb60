#include "app/service_notify.hpp"

#include <eventforge/config/logging.hpp>

#ifdef EF_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include <cstring>

namespace ef::app::service {

namespace {

/// Sends `state` (newline-separated assignments) to the socket systemd
/// named. A manager that cannot be told is worth a warning, not a stop:
/// the service itself works, only its unit's state lags behind.
void send(const std::string& state) {
#ifdef EF_HAVE_SYSTEMD
  // 0: keep NOTIFY_SOCKET in the environment, as STOPPING=1 follows later.
  int rc = sd_notify(0, state.c_str());
  if (rc < 0)
    ef::log::warn("cannot notify the service manager ({}): {}", state,
                  std::strerror(-rc));
#else
  (void)state;
#endif
}

/// A STATUS= value is one line.
std::string one_line(std::string text) {
  for (auto& c : text)
    if (c == '\n')
      c = ' ';
  return text;
}

} // namespace

void notify_ready(const std::string& status) {
  send("READY=1\nSTATUS=" + one_line(status));
}

void notify_stopping(const std::string& status) {
  send("STOPPING=1\nSTATUS=" + one_line(status));
}

void notify_status(const std::string& status) {
  send("STATUS=" + one_line(status));
}

} // namespace ef::app::service
