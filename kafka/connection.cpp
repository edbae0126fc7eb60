#include "kafka/connection.hpp"

#include "kafka/client_config.hpp"

#include "kafka/client_events.hpp"

#include "config/nearest.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <list>
#include <stdexcept>

namespace ef::kafka {

namespace {

/// Every property some client of kafka/ sets (make_conf refuses a role that
/// sets another, so this list cannot fall behind the clients).
constexpr std::array<const char*, 19> owned_properties = {
  "bootstrap.servers",
  "client.id",
  "group.id",
  "enable.auto.commit",
  "enable.auto.offset.store",
  "auto.offset.reset",
  "enable.partition.eof",
  "partition.assignment.strategy",
  "session.timeout.ms",
  "heartbeat.interval.ms",
  "fetch.wait.max.ms",
  "queued.max.messages.kbytes",
  "queued.min.messages",
  "enable.idempotence",
  "acks",
  "linger.ms",
  "message.timeout.ms",
  "log.connection.close",
  "statistics.interval.ms",
};

/// Why an owned property may not be given, in words an operator can act on.
std::string why_owned(const std::string& key) {
  // Those with a key of EventForge's own, by that key.
  static const std::pair<const char*, const char*> own_keys[] = {
    {"bootstrap.servers", "kafka.brokers"},
    {"session.timeout.ms", "kafka.session-timeout-ms"},
    {"fetch.wait.max.ms", "kafka.fetch-wait-max-ms"},
    {"message.timeout.ms", "kafka.delivery-timeout-ms"},
    {"statistics.interval.ms", "kafka.statistics-interval-ms"},
  };
  for (auto& [property, own] : own_keys)
    if (key == property)
      return std::string("set ") + own + " instead";
  return "EventForge sets it on its clients itself: offsets move only after "
         "the database commit and producers are idempotent with acks=all";
}

/// librdkafka's error text with a secret's value taken out.
std::string without_value(const std::string& key, const std::string& value,
                          std::string text) {
  if (!is_secret_property(key) || value.empty())
    return text;
  for (auto at = text.find(value); at != std::string::npos;
       at = text.find(value, at))
    text.replace(at, value.size(), "***");
  return text;
}

/// Swallows a client's log lines: the check's throwaway client has no
/// brokers on purpose and would say so.
class silent : public RdKafka::EventCb {
public:
  void event_cb(RdKafka::Event&) override {}
};

/// Every property librdkafka knows, for "did you mean".
std::vector<std::string> property_names(RdKafka::Conf& conf) {
  std::vector<std::string> out;
  std::unique_ptr<std::list<std::string>> dump(conf.dump());
  for (auto i = dump->begin(); i != dump->end(); ++i) {
    out.push_back(*i); // name, then value
    if (++i == dump->end())
      break;
  }
  return out;
}

/// Why the file a property names cannot be read (the path is named: it is
/// not a secret), or nothing. librdkafka would say only "system lib".
std::optional<std::string> unreadable_file(const std::string& key,
                                           const std::string& path) {
  static const char* file_keys[] = {
    "ssl.ca.location",  "ssl.certificate.location",
    "ssl.key.location", "ssl.keystore.location",
    "ssl.crl.location", "sasl.kerberos.keytab"};
  if (std::find(std::begin(file_keys), std::end(file_keys), key) ==
        std::end(file_keys) ||
      path.empty() || (key == "ssl.ca.location" && path == "probe"))
    return std::nullopt;
  if (::access(path.c_str(), R_OK) == 0)
    return std::nullopt;
  return "cannot read " + path + ": " + std::strerror(errno);
}

} // namespace

bool is_secret_property(const std::string& key) {
  for (const char* word : {"password", "secret", "key.pem", ".pem", "jaas",
                           "oauthbearer.config", "ssl_key"})
    if (key.find(word) != std::string::npos)
      return true;
  return false;
}

bool is_owned_property(const std::string& key) {
  return std::find(owned_properties.begin(), owned_properties.end(), key) !=
         owned_properties.end();
}

std::unique_ptr<RdKafka::Conf> make_conf(const connection& cluster,
                                         const properties& role_props) {
  std::unique_ptr<RdKafka::Conf> conf(
    RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  for (auto& [k, v] : cluster.properties)
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
      throw std::runtime_error("kafka property " + k + ": " +
                               without_value(k, v, err));
  for (auto& [k, v] : role_props) {
    if (!is_owned_property(k))
      throw std::logic_error("kafka client sets " + k +
                             ", which kafka/connection.cpp does not list as "
                             "owned");
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
      throw std::runtime_error("kafka config " + k + "=" + v + ": " + err);
  }
  if (!cluster.brokers.empty() &&
      conf->set("bootstrap.servers", cluster.brokers, err) !=
        RdKafka::Conf::CONF_OK)
    throw std::runtime_error("kafka config bootstrap.servers: " + err);
  // Its log lines, errors and statistics go through EventForge.
  attach_client_events(*conf, cluster.statistics_interval_ms);
  return conf;
}

std::unique_ptr<RdKafka::KafkaConsumer>
make_side_consumer(const connection& cluster, const std::string& group,
                   const std::string& role, const properties& extra) {
  properties props{{"client.id", "eventforge-" + role},
                   {"group.id", group},
                   {"enable.auto.commit", "false"},
                   {"enable.partition.eof", "false"},
                   {"log.connection.close", "false"}};
  for (auto& [k, v] : extra)
    props[k] = v;
  auto conf = make_conf(cluster, props);
  std::string err;
  std::unique_ptr<RdKafka::KafkaConsumer> c(
    RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!c)
    throw std::runtime_error("cannot create kafka " + role + ": " + err);
  return c;
}

std::optional<std::string> check_properties(const properties& props) {
  if (props.empty())
    return std::nullopt; // nothing to check: no throwaway client at start
  for (auto& [k, v] : props)
    if (is_owned_property(k))
      return "kafka property " + k + " may not be set: " + why_owned(k);
  std::unique_ptr<RdKafka::Conf> conf(
    RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL));
  std::string err;
  for (auto& [k, v] : props) {
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
      return "kafka property " + k + ": " + without_value(k, v, err) +
             config::did_you_mean(k, property_names(*conf));
    if (auto unreadable = unreadable_file(k, v))
      return "kafka property " + k + ": " + *unreadable;
  }
  // Some settings are checked only when a client is made (a CA file that
  // cannot be read, SASL without credentials): make one, with no brokers
  // so it reaches nothing, and nothing to say.
  silent quiet;
  if (conf->set("event_cb", static_cast<RdKafka::EventCb*>(&quiet), err) !=
      RdKafka::Conf::CONF_OK)
    return "kafka event_cb: " + err;
  std::unique_ptr<RdKafka::Producer> client(
    RdKafka::Producer::create(conf.get(), err));
  if (!client) {
    for (auto& [k, v] : props)
      err = without_value(k, v, err);
    return "kafka properties refused by librdkafka: " + err;
  }
  return std::nullopt;
}

} // namespace ef::kafka
