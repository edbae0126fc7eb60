#pragma once

// Kafka failures as EventForge's code sees them: one classification of
// librdkafka's error codes, carried as caf::error values (category
// "ef_kafka") with the broker's words as context. Nothing above kafka/ sees
// an RdKafka::ErrorCode.

#include <caf/error.hpp>
#include <caf/make_message.hpp>

#include <cstdint>
#include <string>

namespace ef::kafka {

/// How a Kafka failure should be treated by its caller.
enum class kafka_errc : std::uint8_t {
  /// Not a failure: a caf::error whose code is 0 is no error (CAF 0.17).
  none = 0,
  /// No broker answered: a transport failure, every broker down, a timeout,
  /// no leader for the partition. Retrying later can succeed.
  unavailable,
  /// The consumer group is rebalancing, or its coordinator moved or is
  /// loading: the member's partitions may be about to change. What was
  /// applied is committed after the rebalance (or redelivered to the next
  /// owner and suppressed as duplicates).
  rebalancing,
  /// The broker refused the request: authorization, an unknown topic or
  /// partition, an invalid offset or request. Retrying the same cannot help.
  refused,
  /// The client can no longer be used (librdkafka's fatal error): only a
  /// new client can go on.
  fatal,
};

const char* to_string(kafka_errc code);

} // namespace ef::kafka

CAF_ERROR_CODE_ENUM(ef::kafka::kafka_errc, "ef_kafka")

namespace ef::kafka {

/// The classified error for librdkafka's error code `rd_err` (an
/// RdKafka::ErrorCode; none for ERR_NO_ERROR), with librdkafka's text for
/// it as the context.
caf::error kafka_error(int rd_err);

/// "rebalancing: Broker: Group rebalance in progress": a Kafka error for a
/// log line, without an actor system to render it. "" for none.
std::string describe(const caf::error& err);

} // namespace ef::kafka
