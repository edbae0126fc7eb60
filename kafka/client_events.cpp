#include "kafka/client_events.hpp"

#include "kafka/client_health.hpp"
#include <eventforge/config/logging.hpp>

#include <librdkafka/rdkafka.h>

#include <stdexcept>

namespace ef::kafka {

namespace {

/// librdkafka's syslog levels: 0-3 errors, 4 warnings, 5 notices, 6
/// informational (EventForge's debug); its debug lines (7) only come when
/// the client was given a `debug` property, and are then what the operator
/// asked to see: info. Named by the client's handle ("eventforge-relay-0#
/// producer-3"): its role, and which one.
void log_line(const std::string& client, int level, const char* fac,
              const char* text) {
  if (level <= 3)
    ef::log::error("kafka {}: {}: {}", client, fac, text);
  else if (level == 4)
    ef::log::warn("kafka {}: {}: {}", client, fac, text);
  else if (level == 5 || level == 7)
    ef::log::info("kafka {}: {}: {}", client, fac, text);
  else
    ef::log::debug("kafka {}: {}: {}", client, fac, text);
}

void log_cb(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  log_line(rd_kafka_name(rk), level, fac, buf);
}

void on_error(const std::string& client, rd_kafka_resp_err_t err,
              const std::string& reason, bool fatal) {
  auto name = rd_kafka_err2name(err);
  client_health::process().error(client, name, reason, fatal);
  if (fatal)
    ef::log::error("kafka {}: {} (fatal): {}", client, name, reason);
  else
    ef::log::warn("kafka {}: {}: {}", client, name, reason);
}

void error_cb(rd_kafka_t* rk, int err, const char* reason, void*) {
  auto code = static_cast<rd_kafka_resp_err_t>(err);
  bool fatal = code == RD_KAFKA_RESP_ERR__FATAL;
  if (fatal) {
    char why[512];
    code = rd_kafka_fatal_error(rk, why, sizeof(why));
    on_error(rd_kafka_name(rk), code, why, true);
    return;
  }
  on_error(rd_kafka_name(rk), code, reason, false);
}

int stats_cb(rd_kafka_t*, char* json, size_t len, void*) {
  client_health::process().update(std::string(json, len));
  return 0; // librdkafka frees the JSON
}

} // namespace

void attach_client_events(RdKafka::Conf& conf, int statistics_interval_ms) {
  auto* c = conf.c_ptr_global();
  if (c == nullptr)
    throw std::logic_error("kafka: not a global configuration");
  rd_kafka_conf_set_log_cb(c, log_cb);
  rd_kafka_conf_set_error_cb(c, error_cb);
  if (statistics_interval_ms > 0) {
    rd_kafka_conf_set_stats_cb(c, stats_cb);
    std::string err;
    if (conf.set("statistics.interval.ms",
                 std::to_string(statistics_interval_ms),
                 err) != RdKafka::Conf::CONF_OK)
      throw std::runtime_error("kafka statistics.interval.ms: " + err);
  }
}

void forward_client_event(RdKafka::Event& e, const std::string& client_name) {
  switch (e.type()) {
  case RdKafka::Event::EVENT_LOG:
    // A debug capture keeps every debug line for itself (thousands): only
    // what is not debug is passed on.
    if (e.severity() <= RdKafka::Event::EVENT_SEVERITY_INFO)
      log_line(client_name, static_cast<int>(e.severity()), e.fac().c_str(),
               e.str().c_str());
    break;
  case RdKafka::Event::EVENT_ERROR:
    on_error(client_name, static_cast<rd_kafka_resp_err_t>(e.err()), e.str(),
             e.fatal());
    break;
  case RdKafka::Event::EVENT_STATS:
    client_health::process().update(e.str());
    break;
  default:
    break;
  }
}

} // namespace ef::kafka
