#pragma once

#include <eventforge/actors/eventforge.hpp>
#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>

#include <caf/all.hpp>

#include <functional>
#include <memory>
#include <string>

namespace ef {
class chaos;
}

namespace ef::app {

/// The HTTP API (Boost.Beast, app/http/server) in front of the EventForge
/// root actor: translates JSON to order commands and their replies or errors
/// back to JSON. It holds no state of its own; every request is one actor
/// request.
///
///   POST /orders               201 {order_id, event_id, status}
///   POST /orders/{id}/cancel   202 {order_id, event_id}
///   GET  /orders/{id}          200 the order, its events and effects
///   GET  /healthz              200 {"status":"ok"} while the process runs
///   GET  /readyz               200/503 {"database","broker","actors"}
///   GET  /metrics              Prometheus text exposition
///   GET  /                     the live recovery page (and /assets/...)
///   GET  /overview             the page's live totals, from durable state
///   GET  /orders/{id}/trace    one order's hops, from durable state
///   GET  /scenarios            the failure scenarios the page can run
///   POST /scenarios/{name}     runs one (demo.enabled or the admin token)
/// Errors: {"error": "...", "field": "..."} with 400/404/409/413/415/503.
class http_frontend {
public:
  /// `metrics` is the tree's telemetry (exported at /metrics); `where`
  /// names the database and broker that /metrics and /readyz read;
  /// `faults` are the tree's crash points, armed by scenario runs (none:
  /// scenarios cannot run). `broker_faults` runs fault commands on the
  /// in-process cluster (docs/chaos.md, "Kafka-side faults"; the runtime's
  /// fault_commands()) for the page's Kafka scenarios; empty: those are
  /// not offered.
  http_frontend(
    caf::actor_system& sys, eventforge_actor root, const config::settings& cfg,
    std::shared_ptr<telemetry> metrics, endpoints where,
    std::shared_ptr<chaos> faults = nullptr,
    std::function<std::string(const std::string&)> broker_faults = {});
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
