#pragma once

#include "persistence/trace_queries.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ef::app {

/// Each consumer group's committed offsets per partition, as the broker
/// reported them; `ok` false if it could not be read (then no offset is
/// shown committed and no trace settled).
struct committed_offsets {
  bool ok = false;
  std::map<std::string, std::vector<std::int64_t>> by_consumer;
};

/// One order's trace for the recovery page (docs/recovery-page.md): its
/// events with their consumers, one timeline of hops (committed, published,
/// delivered, effect, replayed, incidents; offset commits last, having no
/// time), whether it is settled, and the counters the page shows. `rows`
/// must be found; `consumers` are the enabled ones, in order.
nlohmann::json order_trace(const persistence::order_trace_rows& rows,
                           const committed_offsets& offsets,
                           const std::vector<std::string>& consumers);

} // namespace ef::app
