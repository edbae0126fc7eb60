#pragma once

// Names of the Kafka record headers EventForge writes and reads: one place,
// so a producer and its readers cannot drift apart.

namespace ef::record_header {

// -- on every order event (relay) ---------------------------------------------

inline constexpr const char* event_id = "event_id";
inline constexpr const char* event_type = "event_type";
/// W3C trace context of the request that placed the order (may be absent).
inline constexpr const char* traceparent = "traceparent";

// -- on a parked event in the DLQ topic (partition actor) ---------------------

inline constexpr const char* dlq_consumer = "dlq.consumer";
inline constexpr const char* dlq_source_topic = "dlq.source.topic";
inline constexpr const char* dlq_source_partition = "dlq.source.partition";
inline constexpr const char* dlq_source_offset = "dlq.source.offset";
inline constexpr const char* dlq_error_class = "dlq.error.class";
inline constexpr const char* dlq_error_message = "dlq.error.message";
inline constexpr const char* dlq_attempts = "dlq.attempts";
inline constexpr const char* dlq_first_failure = "dlq.first_failure";
inline constexpr const char* dlq_last_failure = "dlq.last_failure";

// -- on a replayed event (DLQ operations) -------------------------------------

/// The DLQ entry ID an operator replayed; its consumer applies it even
/// though the order is parked.
inline constexpr const char* dlq_replay_of = "dlq.replay_of";

} // namespace ef::record_header
