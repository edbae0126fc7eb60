#pragma once

#include "app/page/order_trace.hpp"

namespace ef::app {

/// The hops of a trace as they are found: those with a time (sorted later)
/// and the offset commits, which have none and go last.
struct trace_hops {
  nlohmann::json timed = nlohmann::json::array();
  nlohmann::json committed = nlohmann::json::array();
};

/// One consumer's part of an event's trace: its entry (deliveries, effects,
/// DLQ entry, committed offset), and whether it is done with the event:
/// applied or discarded, its offset committed past every copy it was
/// handed, no replay under way.
struct consumer_part {
  nlohmann::json entry;
  bool settled = false;
};

/// Adds the consumer's hops to `hops` and returns its part.
consumer_part trace_consumer(const persistence::traced_event& e,
                             const std::string& name,
                             const persistence::traced_consumer& c,
                             const committed_offsets& offsets,
                             trace_hops& hops);

} // namespace ef::app
