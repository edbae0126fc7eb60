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

} // namespace ef
