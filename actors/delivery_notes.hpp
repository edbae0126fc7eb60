#pragma once

#include "actors/context.hpp"
#include "applier/event_applier.hpp"
#include "messages/tree_messages.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace ef {

/// What a partition actor tells about its deliveries, in one place: the
/// consumer_* metrics, the trace hops (delivered, applied, suppressed,
/// deferred), the end-to-end latency, and the recovery journal line of a
/// suppressed duplicate, which must be written before the offset past it
/// is committed (once committed, nothing else tells of that delivery).
class delivery_notes {
public:
  delivery_notes(context_ptr ctx, std::string consumer, std::int32_t partition);

  /// An attempt at a record begins (consumer_deliveries_total, retries
  /// included).
  void attempted();
  /// The record is about to be applied: its "delivered" hop.
  void delivered(const order_event& ev, const partition_record& rec);

  /// Its outcome (order_missing is a failure: nothing is noted).
  void outcome(const order_event& ev, apply_outcome outcome,
               const partition_record& rec, double handler_seconds);

  /// Writes the journal lines of suppressed deliveries before an offset
  /// moves past them; a journal that cannot write within a second does not
  /// hold the partition (logged).
  void before_offset_moves();

private:
  context_ptr ctx_;
  std::string consumer_;
  std::int32_t partition_;
  bool journal_unflushed_ = false;
};

} // namespace ef
