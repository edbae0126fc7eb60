#pragma once

// Private to persistence/ (not exported): the JSON the outbox stores for an
// order's events, written by the API's store and by the bulk backlog writer
// alike.

#include <cstdint>
#include <string>
#include <vector>

namespace ef::persistence {

struct order_line {
  std::string sku;
  std::int64_t qty = 0;
  std::int64_t price_cents = 0;
};

/// OrderCreated payload: {order_id, customer_id, total_cents, items}.
std::string created_payload(const std::string& order_id,
                            const std::string& customer_id,
                            std::int64_t total_cents,
                            const std::vector<order_line>& items);

/// Outbox headers: {traceparent} when one is known, else {}.
std::string headers_json(const std::string& traceparent);

} // namespace ef::persistence
