// The relay's lead over the consumers (relay.max-lead-bytes): how far the
// log may run ahead of the slowest enabled consumer, and the share of the
// room left that one relay may publish before it measures again.

#include "actors/relay_shard.hpp"

#include <eventforge/config/logging.hpp>

#include <algorithm>

namespace ef {

using namespace std::chrono_literals;

bool relay_shard_state::too_far_ahead() {
  if (record_bytes <= 0 || !ctx->lead || !ctx->lead_limit)
    return false; // nothing published yet, or no broker to ask
  auto limit = ctx->lead_limit->bytes();
  if (limit <= 0) {
    lead_budget = -1;
    return false; // off
  }
  auto now = clock->now();
  if (now < next_lead_check)
    return !lead_block.empty() || lead_budget == 0;
  next_lead_check = now + lead_check_interval;
  std::vector<kafka::consumer_lead::entry> leads;
  try {
    leads = ctx->lead->current();
  } catch (const std::exception& e) {
    // The broker did not answer (a broker down, a coordinator moving): the
    // last decision stands until it does. Publishing fails the same way if
    // the whole cluster is gone; crashing the relay would only add a
    // restart to the outage.
    ef::log::debug("relay {}: consumer lead unknown ({}); keeping the last "
                   "decision",
                   shard, e.what());
    if (lead_block.empty())
      lead_budget = -1; // not waiting, and no room measured: no share
    return !lead_block.empty();
  }
  std::string why;
  double most_ahead = 0;
  for (auto& x : leads)
    most_ahead =
      std::max(most_ahead, static_cast<double>(x.ahead) * record_bytes);
  // Until the next measurement this relay may add its share of what is left
  // below the limit, and no more: every shard publishes on the same
  // figures, and a whole batch on each could carry the log past the limit.
  lead_budget =
    std::max(0.0, (static_cast<double>(limit) - most_ahead) /
                    static_cast<double>(std::max(1, ctx->cfg.relay.shards)));
  for (auto& x : leads) {
    if (static_cast<double>(x.ahead) * record_bytes <
        static_cast<double>(limit))
      continue;
    why = "partition " + std::to_string(x.partition) + " holds " +
          std::to_string(x.ahead) + " records (~" +
          std::to_string(static_cast<long long>(x.ahead * record_bytes) >> 10) +
          " KiB) beyond " + x.consumer + "'s committed offset " +
          std::to_string(x.read);
    break;
  }
  if (why.empty() != lead_block.empty()) {
    if (why.empty())
      ef::log::info("relay {}: consumers caught up; publishing again", shard);
    else
      ef::log::info("relay {}: {} (relay.max-lead-bytes={}); waiting, the "
                    "outbox keeps the rest",
                    shard, why, limit);
  }
  lead_block = why;
  ctx->metrics->set("relay_waiting_for_consumers",
                    {{"shard", std::to_string(shard)}}, why.empty() ? 0 : 1);
  return !why.empty();
}

void relay_shard_state::account_batch(
  const std::vector<persistence::outbox_row>& rows) {
  double bytes = 0;
  for (auto& r : rows)
    // Value (the event as JSON), key and headers, roughly as on the wire.
    bytes += static_cast<double>(
      2 * r.event.event_id.size() + 2 * r.event.order_id.size() +
      r.event.payload.size() + r.event.traceparent.size() + 150);
  auto avg = bytes / static_cast<double>(rows.size());
  record_bytes = record_bytes == 0 ? avg : 0.8 * record_bytes + 0.2 * avg;
  if (lead_budget >= 0)
    lead_budget = std::max(0.0, lead_budget - bytes);
  ctx->metrics->observe("relay_batch_size", {},
                        static_cast<double>(rows.size()));
}

} // namespace ef
