#include "actors/gap_repair.hpp"

#include <eventforge/config/logging.hpp>

#include <algorithm>

namespace ef {

namespace {

class database_ledger : public gap_ledger {
public:
  explicit database_ledger(const std::string& dsn) : store_(dsn) {
    // nop
  }

  int current_epoch() override { return store_.current_epoch(); }

  persistence::gap_record record_gap(const std::string& consumer,
                                     std::int32_t partition, std::int64_t from,
                                     std::int64_t to,
                                     std::int64_t log_end) override {
    return store_.record_gap(consumer, partition, from, to, log_end);
  }

private:
  persistence::repair_store store_;
};

} // namespace

std::unique_ptr<gap_ledger> database_gap_ledger(const std::string& dsn) {
  return std::make_unique<database_ledger>(dsn);
}

settled_position settle_lost_position(gap_ledger& ledger,
                                      kafka::group_client& client,
                                      telemetry& metrics,
                                      const std::string& consumer,
                                      std::int32_t p, std::int64_t offset) {
  auto marks = client.query_watermarks(p);
  // The offsets this consumer will never read from this log. Records already
  // handed to the worker lie below `offset` and are applied as usual.
  auto from = std::max<std::int64_t>(offset, 0);
  auto to = std::max(from, marks.low);
  auto gap = ledger.record_gap(consumer, p, from, to, marks.high);
  settled_position out{marks.low, false};
  if (offset > marks.high) {
    // The log ends before our position: this is not the log we read. The
    // repairer begins a new epoch (its witness is gone too); whatever the
    // worker holds belongs to the old log.
    metrics.add("consumer_positions_lost_total", {{"consumer", consumer}});
    ef::log::warn("{}: partition {}: position {} is past the log end {}: the "
                  "broker lost this log (replaced or truncated); rereading "
                  "from offset {}",
                  consumer, p, offset, marks.high, marks.low);
    out.log_replaced = true;
  } else if (to > from || gap.at_risk > 0) {
    metrics.add("consumer_positions_lost_total", {{"consumer", consumer}});
    metrics.add("repair_republished_total", {{"reason", "consumer_gap"}},
                static_cast<std::uint64_t>(gap.at_risk));
    ef::log::warn("{}: partition {}: {} is no longer on the broker (log now "
                  "{}..{}); offsets {}..{} cannot be read, {} event(s) there "
                  "not applied by {} are queued again (epoch {}); resuming at "
                  "{}",
                  consumer, p,
                  offset < 0 ? std::string("no committed offset")
                             : "offset " + std::to_string(offset),
                  marks.low, marks.high, from, to, gap.at_risk, consumer,
                  gap.epoch, marks.low);
  } else {
    ef::log::debug("{}: partition {}: no committed offset; starting at the log "
                   "start ({})",
                   consumer, p, marks.low);
  }
  return out;
}

} // namespace ef
