#include "actors/event_log.hpp"

#include <eventforge/config/logging.hpp>

namespace ef::event_log {

std::string trace_id_of(const std::string& traceparent) {
  return traceparent.size() == 55 ? traceparent.substr(3, 32) : "";
}

void hop(const char* name, const std::string& order_id,
         const std::string& event_id, const std::string& traceparent,
         const fields& extra) {
  if (!log::line_logger().should_log(spdlog::level::debug))
    return;
  std::string line;
  auto trace = trace_id_of(traceparent);
  if (log::json()) {
    using log::json_string;
    line = "\"msg\":" + json_string(name) +
           ",\"order_id\":" + json_string(order_id) +
           ",\"event_id\":" + json_string(event_id) +
           ",\"trace_id\":" + json_string(trace);
    for (auto& [k, v] : extra)
      line += "," + json_string(k) + ":" + json_string(v);
    log::debug_members(line);
    return;
  }
  line = std::string(name) + " order_id=" + order_id + " event_id=" + event_id +
         " trace_id=" + trace;
  for (auto& [k, v] : extra)
    line += " " + k + "=" + v;
  log::debug("{}", line);
}

} // namespace ef::event_log
