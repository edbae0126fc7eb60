#include "actors/relay_window.hpp"

#include <stdexcept>

namespace ef {

void relay_window::sent(int epoch,
                        const std::vector<persistence::outbox_row>& rows,
                        std::uint64_t first_ticket,
                        clock::time_point claimed_at) {
  for (std::size_t i = 0; i < rows.size(); ++i)
    rows_.emplace(first_ticket + i, entry{rows[i], epoch, claimed_at});
}

relay_window::settlement
relay_window::settle(std::vector<kafka::ticketed_delivery> reports) {
  settlement out;
  for (auto& d : reports) {
    auto it = rows_.find(d.ticket);
    if (it == rows_.end())
      continue;
    auto e = std::move(it->second);
    rows_.erase(it);
    const auto& order = e.row.event.order_id;
    if (!d.report.persisted) {
      if (out.failed.empty())
        out.first_error = d.report.error;
      out.failed.push_back(e.row.seq);
      failed_orders_.insert(order);
      continue;
    }
    if (failed_orders_.count(order) > 0)
      throw std::runtime_error("delivery gap: seq " +
                               std::to_string(e.row.seq) + " of order " +
                               order +
                               " acknowledged after an earlier row of the "
                               "order failed");
    out.acked.push_back({std::move(e.row), e.epoch, d.report.partition,
                         d.report.offset, e.claimed_at});
  }
  return out;
}

std::vector<std::int64_t> relay_window::seqs() const {
  std::vector<std::int64_t> out;
  out.reserve(rows_.size());
  for (auto& [ticket, e] : rows_)
    out.push_back(e.row.seq);
  return out;
}

} // namespace ef
