#pragma once

#include "actors/eventforge.hpp"
#include "config/settings.hpp"
#include "kafka/embedded_broker.hpp"
#include "persistence/embedded_postgres.hpp"

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

/// Topics the in-process broker creates for these settings.
std::vector<kafka::embedded_broker::topic_spec>
broker_topics(const config::settings& cfg);

} // namespace ef::app
