#include "persistence/order_rows.hpp"

#include <eventforge/messages/events.hpp>

#include <nlohmann/json.hpp>

namespace ef::persistence {

std::string created_payload(const std::string& order_id,
                            const std::string& customer_id,
                            std::int64_t total_cents,
                            const std::vector<order_line>& items) {
  auto lines = nlohmann::json::array();
  for (auto& i : items)
    lines.push_back(
      {{"sku", i.sku}, {"qty", i.qty}, {"price_cents", i.price_cents}});
  return nlohmann::json{{"schema_version", payload_schema_version},
                        {"order_id", order_id},
                        {"customer_id", customer_id},
                        {"total_cents", total_cents},
                        {"items", lines}}
    .dump();
}

std::string headers_json(const std::string& traceparent) {
  auto h = nlohmann::json::object();
  if (!traceparent.empty())
    h["traceparent"] = traceparent;
  return h.dump();
}

} // namespace ef::persistence
