#pragma once

// Internal to kafka/: nothing above this folder includes librdkafka.

#include <librdkafka/rdkafkacpp.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace ef::kafka {

/// Builds an RdKafka::Conf from key/value pairs; throws std::runtime_error
/// naming the property librdkafka rejected.
inline std::unique_ptr<RdKafka::Conf>
make_conf(const std::map<std::string, std::string>& props) {
  std::unique_ptr<RdKafka::Conf> conf(
    RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  for (auto& [k, v] : props)
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
      throw std::runtime_error("kafka config " + k + "=" + v + ": " + err);
  return conf;
}

/// A consumer handle for reading offsets and records on the side (the probe,
/// the verifier, tests) that never commits by itself. `extra` adds or overrides
/// properties; `role` names the handle in the error thrown when librdkafka
/// refuses to create it.
inline std::unique_ptr<RdKafka::KafkaConsumer>
make_side_consumer(const std::string& brokers, const std::string& group,
                   const std::string& role,
                   const std::map<std::string, std::string>& extra = {}) {
  std::map<std::string, std::string> props{{"bootstrap.servers", brokers},
                                           {"group.id", group},
                                           {"enable.auto.commit", "false"},
                                           {"enable.partition.eof", "false"},
                                           {"log.connection.close", "false"}};
  for (auto& [k, v] : extra)
    props[k] = v;
  auto conf = make_conf(props);
  std::string err;
  std::unique_ptr<RdKafka::KafkaConsumer> c(
    RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!c)
    throw std::runtime_error("cannot create kafka " + role + ": " + err);
  return c;
}

} // namespace ef::kafka
