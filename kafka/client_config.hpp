#pragma once

// Internal to kafka/: nothing above this folder includes librdkafka.

#include "kafka/connection.hpp"

#include <librdkafka/rdkafkacpp.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace ef::kafka {

/// The properties EventForge sets itself on some client: at-least-once
/// delivery and exactly one effect depend on them (offsets committed only
/// after the DB commit, idempotent acks=all producers, no silent offset
/// reset), or they have a key of EventForge's own (kafka.brokers,
/// kafka.session-timeout-ms, ...). A connection's properties may not set them.
bool is_owned_property(const std::string& key);

/// Builds an RdKafka::Conf for one client of `cluster`: its properties
/// (TLS, SASL, ...), then `role_props`, which may only name owned
/// properties. Throws std::runtime_error naming the property librdkafka
/// rejected (never a secret's value).
std::unique_ptr<RdKafka::Conf> make_conf(const connection& cluster,
                                         const properties& role_props);

/// A consumer handle for reading offsets and records on the side (the probe,
/// the verifier, tests) that never commits by itself. `extra` adds or overrides
/// properties; `role` names the handle (its client.id) and the error thrown
/// when librdkafka refuses to create it.
std::unique_ptr<RdKafka::KafkaConsumer>
make_side_consumer(const connection& cluster, const std::string& group,
                   const std::string& role, const properties& extra = {});

} // namespace ef::kafka
