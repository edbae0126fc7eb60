#pragma once

#include <eventforge/actors/eventforge.hpp>
#include <eventforge/config/settings.hpp>

#include <memory>

namespace ef::app {

/// The outside world EventForge runs against. With database.url empty a
/// private PostgreSQL cluster is started; with kafka.brokers empty an
/// in-process Kafka-protocol broker. Either way the tree gets plain
/// endpoints and runs the same code. Stops what it started, in reverse order.
class runtime {
public:
  explicit runtime(const config::settings& cfg);
  ~runtime();

  const endpoints& where() const { return endpoints_; }

  /// Replaces the in-process broker by a new, empty one (new addresses), as
  /// a restart of `serve` on the embedded defaults does. Throws if this
  /// process does not host the broker.
  void restart_broker();

  /// Whether this process hosts the broker (kafka.brokers was empty).
  bool hosts_broker() const;
  /// Whether this process hosts the database (database.url was empty).
  bool hosts_database() const;

  /// The services this process hosts. Opaque to a host; EventForge's own
  /// tools reach into them (fault injection into the in-process broker)
  /// through app/embedded/hosted.hpp.
  struct hosted;
  hosted& services() { return *hosted_; }

private:
  std::unique_ptr<hosted> hosted_;
  endpoints endpoints_;
  config::settings cfg_;
};

} // namespace ef::app
