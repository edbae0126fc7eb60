#include "kafka/errors.hpp"

#include <librdkafka/rdkafkacpp.h>

namespace ef::kafka {

const char* to_string(kafka_errc code) {
  switch (code) {
  case kafka_errc::none:
    return "none";
  case kafka_errc::unavailable:
    return "unavailable";
  case kafka_errc::rebalancing:
    return "rebalancing";
  case kafka_errc::refused:
    return "refused";
  case kafka_errc::fatal:
    return "fatal";
  }
  return "unknown";
}

namespace {

kafka_errc classify(RdKafka::ErrorCode rc) {
  switch (rc) {
  case RdKafka::ERR_NO_ERROR:
    return kafka_errc::none;
  case RdKafka::ERR__TRANSPORT:
  case RdKafka::ERR__ALL_BROKERS_DOWN:
  case RdKafka::ERR__TIMED_OUT:
  case RdKafka::ERR__MSG_TIMED_OUT:
  case RdKafka::ERR__WAIT_COORD:
  case RdKafka::ERR_REQUEST_TIMED_OUT:
  case RdKafka::ERR_BROKER_NOT_AVAILABLE:
  case RdKafka::ERR_LEADER_NOT_AVAILABLE:
  case RdKafka::ERR_NOT_LEADER_FOR_PARTITION:
  case RdKafka::ERR_NETWORK_EXCEPTION:
  case RdKafka::ERR_NOT_ENOUGH_REPLICAS:
  case RdKafka::ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    return kafka_errc::unavailable;
  case RdKafka::ERR_REBALANCE_IN_PROGRESS:
  case RdKafka::ERR_NOT_COORDINATOR:
  case RdKafka::ERR_COORDINATOR_NOT_AVAILABLE:
  case RdKafka::ERR_COORDINATOR_LOAD_IN_PROGRESS:
  case RdKafka::ERR_ILLEGAL_GENERATION:
  case RdKafka::ERR_UNKNOWN_MEMBER_ID:
  case RdKafka::ERR__STATE:
    return kafka_errc::rebalancing;
  case RdKafka::ERR__FATAL:
    return kafka_errc::fatal;
  default:
    return kafka_errc::refused;
  }
}

} // namespace

caf::error kafka_error(int rd_err) {
  auto rc = static_cast<RdKafka::ErrorCode>(rd_err);
  auto code = classify(rc);
  if (code == kafka_errc::none)
    return caf::none;
  return caf::make_error(code, RdKafka::err2str(rc));
}

std::string describe(const caf::error& err) {
  if (!err)
    return {};
  std::string out =
    err.category() == caf::detail::error_factory<kafka_errc>::category
      ? to_string(static_cast<kafka_errc>(err.code()))
      : caf::to_string(err);
  if (err.context().match_elements<std::string>())
    out += ": " + err.context().get_as<std::string>(0);
  return out;
}

} // namespace ef::kafka
