#pragma once

#include "actors/chaos.hpp"
#include <eventforge/actors/eventforge.hpp>
#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>
#include <eventforge/http/frontend.hpp>

#include <caf/all.hpp>

#include <memory>
#include <mutex>
#include <string>

namespace ef::app {

/// The tree and its HTTP front hosted in this process (by `chaos` and
/// `bench`), restartable on new endpoints (a new broker) with the same
/// metrics and crash decisions, and the same port while no other socket
/// took it meanwhile (then a new one: url() tells).
class pipeline {
public:
  pipeline(caf::actor_system& sys, config::settings cfg,
           std::shared_ptr<telemetry> metrics, std::shared_ptr<chaos> faults);
  ~pipeline();

  void start(const endpoints& where);
  /// Stops the HTTP front and the tree and waits for every actor.
  void stop();
  /// "http://host:port" of the current start; safe from any thread, also
  /// while the pipeline restarts.
  std::string url() const;
  const eventforge_actor& root() const { return root_; }

private:
  caf::actor_system& sys_;
  config::settings cfg_;
  std::shared_ptr<telemetry> metrics_;
  std::shared_ptr<chaos> faults_;
  eventforge_actor root_;
  std::unique_ptr<http_frontend> http_;
  mutable std::mutex url_mtx_;
  std::string url_; ///< guarded by url_mtx_
};

/// Outbox rows not yet published.
long outbox_unsent(const std::string& dsn);

/// Resident set size of this process in MiB: now (VmRSS) and its peak
/// (VmHWM).
double rss_mib();
double peak_rss_mib();

/// Restarts the peak (VmHWM) at the current size, so that a phase measures
/// its own peak. Returns false where the kernel does not allow it.
bool reset_peak_rss();

} // namespace ef::app
