#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ef::event_log {

/// Extra key/value pairs of a hop line (bounded, non-secret values).
using fields = std::vector<std::pair<std::string, std::string>>;

/// Logs one hop of an event's path at debug level: accepted, committed,
/// claimed, published, acked, marked, delivered, applied, suppressed,
/// parked, offset_committed. Every line carries order_id, event_id and the
/// W3C trace ID (from `traceparent`), so one grep of an order ID shows its
/// whole path. With the JSON format each line is one JSON object.
void hop(const char* name, const std::string& order_id,
         const std::string& event_id, const std::string& traceparent,
         const fields& extra = {});

/// The trace ID part of a traceparent ("" if malformed).
std::string trace_id_of(const std::string& traceparent);

} // namespace ef::event_log
