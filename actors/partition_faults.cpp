#include "actors/partition_faults.hpp"

#include "messages/ids.hpp"
#include "messages/record_headers.hpp"

namespace ef {

partition_faults::partition_faults(std::shared_ptr<chaos> faults,
                                   std::string consumer)
    : faults_(std::move(faults)), consumer_(std::move(consumer)) {
  // nop
}

std::string partition_faults::key(const order_event& ev,
                                  const partition_record& rec) const {
  // Each consumer is its own actor: it gets its own crash decisions.
  return consumer_ + "/" +
         chaos_key(rec.header(record_header::traceparent), ev.event_type,
                   ev.event_id);
}

bool partition_faults::poisoned(const order_event& ev,
                                const partition_record& rec) const {
  return rec.header(record_header::dlq_replay_of).empty() &&
         faults_->poisoned(key(ev, rec));
}

void partition_faults::before_db_commit(
  const std::vector<delivery>& batch) const {
  for (auto& d : batch)
    faults_->check(crash_point::consumer_before_db_commit, key(d.ev, *d.rec),
                   {d.ev.order_id, d.ev.event_id, consumer_});
}

size_t partition_faults::after_db_before_offset(
  const std::vector<delivery>& batch) const {
  auto crash_at = batch.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& d = batch[i];
    if (faults_->fires(crash_point::consumer_after_db_before_offset,
                       key(d.ev, *d.rec),
                       {d.ev.order_id, d.ev.event_id, consumer_}) &&
        crash_at == batch.size())
      crash_at = i;
  }
  return crash_at;
}

void partition_faults::after_dlq_ack(const partition_record& rec,
                                     const std::string& event_type,
                                     const std::string& event_id) const {
  faults_->check(
    crash_point::dlq_after_dlq_ack_before_offset,
    consumer_ + "/" +
      chaos_key(rec.header(record_header::traceparent), event_type, event_id),
    {rec.key, is_uuid(event_id) ? event_id : "", consumer_});
}

} // namespace ef
