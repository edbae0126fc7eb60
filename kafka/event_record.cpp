#include "kafka/event_record.hpp"

#include "messages/ids.hpp"

#include <nlohmann/json.hpp>

namespace ef::kafka {

std::string encode_value(const order_event& ev) {
  nlohmann::json v{{"event_id", ev.event_id},
                   {"event_type", ev.event_type},
                   {"order_id", ev.order_id},
                   {"occurred_at", ev.occurred_at},
                   {"payload", nlohmann::json::parse(ev.payload)}};
  return v.dump();
}

std::optional<order_event> decode_value(const std::string& value,
                                        const std::string& key,
                                        std::string& error) {
  auto v = nlohmann::json::parse(value, nullptr, false);
  if (v.is_discarded() || !v.is_object()) {
    error = "value is not a JSON object";
    return std::nullopt;
  }
  order_event ev;
  for (auto [field, out] :
       {std::pair<const char*, std::string*>{"event_id", &ev.event_id},
        {"event_type", &ev.event_type},
        {"order_id", &ev.order_id},
        {"occurred_at", &ev.occurred_at}}) {
    auto i = v.find(field);
    if (i == v.end() || !i->is_string()) {
      error = std::string("field ") + field + " missing or not a string";
      return std::nullopt;
    }
    *out = i->get<std::string>();
  }
  if (!is_uuid(ev.event_id) || !is_uuid(ev.order_id)) {
    error = "event_id and order_id must be UUIDs";
    return std::nullopt;
  }
  if (ev.event_type != order_created_type &&
      ev.event_type != order_cancelled_type) {
    error = "unknown event_type \"" + ev.event_type + "\"";
    return std::nullopt;
  }
  if (key != ev.order_id) {
    error = "record key does not match order_id";
    return std::nullopt;
  }
  auto p = v.find("payload");
  ev.payload = p == v.end() ? "{}" : p->dump();
  return ev;
}

} // namespace ef::kafka
