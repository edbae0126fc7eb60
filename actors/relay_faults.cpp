#include "actors/relay_faults.hpp"

namespace ef {

relay_faults::relay_faults(std::shared_ptr<chaos> faults)
    : faults_(std::move(faults)) {
  // nop
}

void relay_faults::after_send(
  const std::vector<persistence::outbox_row>& rows) const {
  check(crash_point::relay_after_publish_before_ack, rows);
}

void relay_faults::after_ack(
  const std::vector<persistence::outbox_row>& rows) const {
  check(crash_point::relay_after_ack_before_mark, rows);
}

void relay_faults::check(
  crash_point p, const std::vector<persistence::outbox_row>& rows) const {
  for (auto& r : rows)
    faults_->check(
      p, chaos_key(r.event.traceparent, r.event.event_type, r.event.event_id),
      {r.event.order_id, r.event.event_id, ""});
}

} // namespace ef
