#pragma once

#include <eventforge/config/settings.hpp>

#include <map>
#include <optional>
#include <string>

namespace ef::kafka {

/// librdkafka properties ("security.protocol" -> "SASL_SSL", ...).
using properties = std::map<std::string, std::string>;

/// How to reach a Kafka cluster: its bootstrap servers and the librdkafka
/// properties every client of EventForge gets (relay and DLQ producers,
/// group members, probes, the lead sampler, the readers), such as TLS and
/// SASL settings. A bare string is a cluster that needs nothing more (the
/// in-process broker, tests).
struct connection {
  std::string brokers;
  kafka::properties properties;
  /// librdkafka's statistics.interval.ms for every client (0: none): what
  /// kafka::client_health keeps (kafka.statistics-interval-ms).
  int statistics_interval_ms = 0;

  connection() = default;
  connection(std::string bootstrap) : brokers(std::move(bootstrap)) {}
  connection(const char* bootstrap) : brokers(bootstrap) {}
  connection(std::string bootstrap, kafka::properties props)
      : brokers(std::move(bootstrap)), properties(std::move(props)) {}
};

/// The cluster at `brokers` with the properties of `cfg` (kafka.properties)
/// and its clients' statistics interval (kafka.statistics-interval-ms).
inline connection cluster_of(const config::settings& cfg, std::string brokers) {
  connection c{std::move(brokers), cfg.kafka.properties};
  c.statistics_interval_ms = cfg.kafka.statistics_interval_ms;
  return c;
}

/// Checks properties as every client would take them, without reaching a
/// broker: a key EventForge sets itself is refused (its semantics depend on
/// it, e.g. enable.auto.commit), then librdkafka must accept every name and
/// value and create a client with them (a CA file it cannot read, a
/// mechanism it was built without). The first problem, naming the key;
/// a secret's value is never part of the text.
std::optional<std::string> check_properties(const properties& props);

/// True for a property whose value is a secret (passwords, keys, OAuth
/// client secrets, JAAS-style configs): never logged, never in an error.
bool is_secret_property(const std::string& key);

} // namespace ef::kafka
