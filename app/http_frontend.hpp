#pragma once

#include "config/settings.hpp"

#include <caf/all.hpp>

#include <memory>
#include <string>

namespace ef::app {

/// The HTTP API (cpp-httplib) in front of the EventForge root actor:
/// translates JSON to order commands and their replies or errors back to
/// JSON. It holds no state of its own; every request is one actor request.
///
///   POST /orders               201 {order_id, event_id, status}
///   POST /orders/{id}/cancel   202 {order_id, event_id}
///   GET  /orders/{id}          200 the order, its events and effects
///   GET  /healthz              200 {"status":"ok"}
/// Errors: {"error": "...", "field": "..."} with 400/404/409/413/415/503.
class http_frontend {
public:
  http_frontend(caf::actor_system& sys, caf::actor root,
                const config::settings& cfg);
  ~http_frontend();

  /// Binds and starts serving on a background thread; returns the port.
  /// Throws std::runtime_error if the address cannot be bound.
  int start();

  /// Stops accepting requests and joins the server thread.
  void stop();

  /// "http://host:port"
  std::string url() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ef::app
