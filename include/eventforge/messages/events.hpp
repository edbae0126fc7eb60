#pragma once

// The event conversation: what an outbox row becomes on the wire and what a
// partition actor applies.

#include <caf/all.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ef {

/// Event types written to the outbox.
constexpr const char* order_created_type = "OrderCreated";
constexpr const char* order_cancelled_type = "OrderCancelled";

/// The payload layout EventForge writes ("schema_version" in every payload;
/// docs/library.md, "Event payloads"). A payload without the field is
/// version 1. One of a newer version is not applied: it is parked in the
/// DLQ as permanent, to be replayed once the consumer knows it.
constexpr int payload_schema_version = 1;

/// One order event, as published to Kafka (key = order_id) and applied by
/// consumers. `payload` is a JSON document text.
struct order_event {
  std::string event_id;
  std::string event_type;
  std::string order_id;
  std::string occurred_at; ///< RFC 3339 UTC
  std::string payload;
  std::string traceparent;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, order_event& x) {
  return f(caf::meta::type_name("order_event"), x.event_id, x.event_type,
           x.order_id, x.occurred_at, x.payload, x.traceparent);
}

/// Where a delivered copy of an event was read; -1 when not read from a
/// partition.
struct delivery_position {
  std::int32_t partition = -1;
  std::int64_t offset = -1;
};

/// A record fetched from a partition, handed by the group member to the actor
/// that owns that partition.
struct partition_record {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string key;
  std::string value;
  std::string event_id_header;
  std::vector<std::pair<std::string, std::string>> headers;

  /// The value of header `name`, or "" if absent.
  const std::string& header(const std::string& name) const {
    static const std::string none;
    for (auto& [k, v] : headers)
      if (k == name)
        return v;
    return none;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, partition_record& x) {
  return f(caf::meta::type_name("partition_record"), x.partition, x.offset,
           x.key, x.value, x.event_id_header, x.headers);
}

/// A partition actor finished a record: its DB transaction committed (or it
/// was a duplicate / undecodable). The group member may now commit offset+1.
struct record_done {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string order_id; ///< for the "offset_committed" hop line only
  std::string event_id;
  std::string traceparent;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, record_done& x) {
  return f(caf::meta::type_name("record_done"), x.partition, x.offset,
           x.order_id, x.event_id, x.traceparent);
}

} // namespace ef
