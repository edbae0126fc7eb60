#pragma once

#include <eventforge/actors/eventforge.hpp>
#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>
#include <eventforge/consumers/consumer_registry.hpp>
#include <eventforge/embedded/runtime.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <memory>

namespace ef {

/// EventForge inside a host's actor system for as long as this object
/// lives: the embedded services (private PostgreSQL, in-process broker)
/// when the settings name no database or broker, then the tree.
///
/// Lifetimes it enforces: the tree must stop before ~actor_system (which
/// waits for every actor, so a running tree makes it wait forever), and the
/// services must outlive the tree (its actors talk to them until they
/// stop). An instance takes the system in its constructor, so it is made
/// after the system and destroyed before it; it stops the tree first, then
/// the services. Nothing is left for the host to order:
///
///   caf::actor_system sys{cfg};
///   ef::instance ef{sys, settings};   // ... ef.root() ...
///   // ~instance: drain, stop the tree, stop the services; then ~sys
class instance {
public:
  struct options {
    /// Where cfg.consumer.enabled is looked up (the built-ins if null).
    std::shared_ptr<const consumer_registry> consumers;
    /// The tree's series (a new registry if null).
    std::shared_ptr<telemetry> metrics;
  };

  /// Starts the services, then the tree (ef::start). Throws what they
  /// throw; whatever started is stopped again first.
  instance(caf::actor_system& sys, const config::settings& cfg,
           options opts = {});
  /// shutdown(), if the host did not call it.
  ~instance();
  instance(const instance&) = delete;
  instance& operator=(const instance&) = delete;

  /// The tree's typed root (eventforge_actor).
  const eventforge_actor& root() const { return root_; }
  /// The database and broker the tree uses.
  const endpoints& where() const { return services_.where(); }
  const std::shared_ptr<telemetry>& metrics() const { return metrics_; }
  /// The embedded services (to restart the broker in a test, say).
  app::runtime& services() { return services_; }

  /// Drains the tree (shutdown.drain-timeout-ms), then stops it, waiting at
  /// most `timeout` for its actors; once. True if every actor of the tree
  /// terminated: otherwise ~actor_system will wait for the rest, and an
  /// error line says so. The services stop with the instance.
  bool shutdown(std::chrono::milliseconds timeout = std::chrono::seconds(30));

private:
  caf::actor_system& sys_;
  config::settings cfg_;
  app::runtime services_; // made first, destroyed last
  std::shared_ptr<telemetry> metrics_;
  eventforge_actor root_;
  bool shut_down_ = false;
};

} // namespace ef
