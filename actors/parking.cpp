#include "actors/parking.hpp"

#include "actors/dlq_operations.hpp"
#include "actors/event_log.hpp"
#include "kafka/outbox_producer.hpp"
#include "messages/ids.hpp"
#include "messages/record_headers.hpp"
#include "persistence/db_error.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/config/options.hpp>
#include <eventforge/messages/dlq_messages.hpp>

#include <set>

namespace ef {

namespace {

class dlq_parking_impl : public parking {
public:
  dlq_parking_impl(context_ptr ctx, std::string consumer, std::int32_t p,
                   const partition_faults& faults)
      : ctx_(ctx), consumer_(std::move(consumer)), partition_(p),
        faults_(faults), ops_(ctx->dsn, ctx->cluster,
                              ctx->cfg.kafka.delivery_timeout_ms, ctx->faults) {
  }

  bool replay_is_ours(std::int64_t entry_id) override {
    auto target = ops_.store().replay_target(entry_id);
    return target && target->first == consumer_ &&
           (target->second == dlq_status::replaying ||
            target->second == dlq_status::replayed);
  }

  std::optional<head> parked_head(const std::string& order_id) override {
    // Orders with parked events, read once: most deliveries are of orders
    // that have none, and that costs no query.
    if (!parked_orders_)
      parked_orders_ = ops_.store().parked_orders(consumer_);
    if (parked_orders_->count(order_id) == 0)
      return std::nullopt;
    auto h = ops_.store().head_of(consumer_, order_id);
    if (!h) {
      parked_orders_->erase(order_id); // resolved meanwhile
      return std::nullopt;
    }
    return head{h->event_id, h->id};
  }

  std::optional<head> waits_behind(std::int64_t entry_id) override {
    auto b = ops_.store().blocker_of(entry_id);
    if (!b || b->status != dlq_status::parked)
      return std::nullopt;
    return head{b->event_id, b->id};
  }

  parked park(const partition_record& rec, const order_event* ev,
              const failure& why, int attempts,
              const std::string& first_failure_at,
              std::int64_t replay_of) override;

  bool release_after(std::int64_t entry_id) override {
    using result = dlq_operations::result;
    auto r = ops_.release_after(entry_id, "release:" + consumer_);
    if (!r)
      return false;
    // The database did not take the release: the record is tried again
    // (its replay is then a suppressed duplicate, and releases anew).
    if (r->what == result::unavailable || r->what == result::unknown)
      throw persistence::db_error(persistence::db_errc::unavailable,
                                  r->message);
    return r->what == result::done || r->what == result::pending;
  }

private:
  /// The entry a failed delivery parks.
  persistence::dlq_entry entry_of(const partition_record& rec,
                                  const order_event* ev, const failure& why,
                                  int attempts,
                                  const std::string& first_failure_at);

  /// Produces `rec`, with every header of entry `e`, to the DLQ topic.
  kafka::delivery copy_to_dlq(const partition_record& rec,
                              const persistence::dlq_entry& e);

  /// A delivery of an entry that is decided: counted as a suppressed
  /// duplicate, parked nowhere.
  void decided_already(const partition_record& rec, const std::string& entry,
                       const std::string& status);

  context_ptr ctx_;
  std::string consumer_;
  std::int32_t partition_;
  const partition_faults& faults_;
  dlq_operations ops_;
  std::unique_ptr<kafka::outbox_producer> producer_;
  std::optional<std::set<std::string>> parked_orders_;
};

persistence::dlq_entry
dlq_parking_impl::entry_of(const partition_record& rec, const order_event* ev,
                           const failure& why, int attempts,
                           const std::string& first_failure_at) {
  persistence::dlq_entry e;
  e.consumer = consumer_;
  // A record that cannot be decoded is named by its bytes: the same record
  // delivered again, at any offset, meets the same entry and its decision.
  e.event_id =
    ev ? ev->event_id : ops_.store().undecodable_key(rec.key, rec.value);
  e.order_key = rec.key;
  e.key = rec.key;
  e.value = rec.value;
  e.traceparent = rec.header(record_header::traceparent);
  e.event_type = ev ? ev->event_type : "";
  e.error_class = why.kind;
  e.error_message = why.message;
  e.attempts = attempts;
  // The topic this consumer read it from, never a header's say-so: a
  // replay publishes there.
  e.source_topic = ctx_->cfg.kafka.topic;
  e.source_partition = rec.partition;
  e.source_offset = rec.offset;
  e.first_failure_at = first_failure_at;
  e.last_failure_at = now_rfc3339();
  return e;
}

kafka::delivery dlq_parking_impl::copy_to_dlq(const partition_record& rec,
                                              const persistence::dlq_entry& e) {
  if (!producer_)
    producer_ = std::make_unique<kafka::outbox_producer>(
      ctx_->cluster, config::dlq_topic_of(ctx_->cfg),
      ctx_->cfg.kafka.delivery_timeout_ms, "eventforge-dlq-" + consumer_);
  return producer_->publish_raw(
    rec.key, rec.value,
    // The entry's own name, so the DLQ topic's reader files this copy under
    // the same entry, also when the record carried an event_id header of
    // its own (an undecodable record's name is made from its bytes again).
    {{record_header::event_id, e.event_id},
     {record_header::dlq_source_topic, e.source_topic},
     {record_header::dlq_source_partition, std::to_string(rec.partition)},
     {record_header::dlq_source_offset, std::to_string(rec.offset)},
     {record_header::dlq_consumer, consumer_},
     {record_header::dlq_error_class, e.error_class},
     {record_header::dlq_error_message, e.error_message},
     {record_header::dlq_attempts, std::to_string(e.attempts)},
     {record_header::dlq_first_failure, e.first_failure_at},
     {record_header::dlq_last_failure, e.last_failure_at},
     {record_header::traceparent, e.traceparent}});
}

parking::parked dlq_parking_impl::park(const partition_record& rec,
                                       const order_event* ev,
                                       const failure& why, int attempts,
                                       const std::string& first_failure_at,
                                       std::int64_t replay_of) {
  auto& store = ops_.store();
  auto e = entry_of(rec, ev, why, attempts, first_failure_at);
  e.id = replay_of;
  // A decision stands whatever arrives again (a repair, a group reset, a
  // redelivery behind a parked head): a delivery of a decided entry, or of
  // one whose replay is on its way, is a duplicate. A failed replay of the
  // entry itself parks it again.
  if (replay_of == 0) {
    auto status = store.status_of(consumer_, e.event_id);
    if (status && *status != dlq_status::parked) {
      decided_already(rec, e.event_id, *status);
      return parked::decided;
    }
  }
  auto d = copy_to_dlq(rec, e);
  if (!d.persisted) {
    ef::log::warn("{} p{} offset {}: DLQ produce not acknowledged ({}); the "
                  "offset stays",
                  consumer_, partition_, rec.offset, d.error);
    return parked::not_stored;
  }
  // Acked by the DLQ, offset not yet committed.
  faults_.after_dlq_ack(rec, e.event_type, e.event_id);
  persistence::parked_entry stored;
  try {
    stored = store.park(e, replay_of != 0 ? persistence::park_as::failed_replay
                                          : persistence::park_as::failure);
  } catch (const persistence::db_error& err) {
    // The DLQ holds a copy; the entry is stored when the record is tried
    // again (the copy's reader will not store it for an event that gets
    // applied meanwhile: dlq_store::park).
    ef::log::warn("{} p{} offset {}: DLQ entry not stored ({}); the offset "
                  "stays",
                  consumer_, partition_, rec.offset, err.what());
    return parked::not_stored;
  }
  if (stored.status != dlq_status::parked) {
    // Decided between the look and the store (an operator was quicker).
    decided_already(rec, e.event_id, stored.status);
    return parked::decided;
  }
  if (parked_orders_)
    parked_orders_->insert(rec.key);
  event_log::hop("parked", rec.key, e.event_id,
                 rec.header(record_header::traceparent),
                 {{"consumer", consumer_}, {"class", why.kind}});
  ctx_->metrics->add("dlq_parked_total",
                     {{"consumer", consumer_}, {"class", why.kind}});
  ef::log::warn("{} p{} offset {}: event {} parked in the DLQ (entry {}) "
                "after {} attempt(s): {}: {}",
                consumer_, partition_, rec.offset, e.event_id, stored.id,
                attempts, why.kind, why.message);
  return parked::stored;
}

void dlq_parking_impl::decided_already(const partition_record& rec,
                                       const std::string& entry,
                                       const std::string& status) {
  ctx_->metrics->add("consumer_duplicates_suppressed_total",
                     {{"consumer", consumer_}});
  ef::log::info("{} p{} offset {}: {} is {} in the DLQ already; this "
                "delivery is a duplicate and parks nothing",
                consumer_, partition_, rec.offset, entry, status);
}

} // namespace

std::unique_ptr<parking> dlq_parking(context_ptr ctx, std::string consumer,
                                     std::int32_t partition,
                                     const partition_faults& faults) {
  return std::make_unique<dlq_parking_impl>(std::move(ctx), std::move(consumer),
                                            partition, faults);
}

} // namespace ef
