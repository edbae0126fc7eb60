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

} // namespace ef::kafka
