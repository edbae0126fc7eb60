#pragma once

#include <eventforge/actors/eventforge.hpp>
#include <eventforge/config/settings.hpp>

#include <memory>

namespace ef::kafka {
class embedded_broker;
}
namespace ef::persistence {
class embedded_postgres;
}

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

  /// Non-null only when this process hosts the broker.
  kafka::embedded_broker* broker() { return broker_.get(); }
  /// Non-null only when this process hosts the database.
  persistence::embedded_postgres* database() { return pg_.get(); }

private:
  std::unique_ptr<persistence::embedded_postgres> pg_;
  std::unique_ptr<kafka::embedded_broker> broker_;
  endpoints endpoints_;
  config::settings cfg_;
};

} // namespace ef::app
