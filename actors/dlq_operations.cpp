#include "actors/dlq_operations.hpp"

#include "messages/ids.hpp"
#include "messages/record_headers.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/dlq_messages.hpp>

namespace ef {

dlq_operations::dlq_operations(std::string dsn, std::string brokers,
                               int delivery_timeout_ms,
                               std::shared_ptr<chaos> faults)
    : brokers_(std::move(brokers)), delivery_timeout_ms_(delivery_timeout_ms),
      faults_(std::move(faults)),
      store_(std::make_unique<persistence::dlq_store>(std::move(dsn))) {
  // nop
}

dlq_operations::~dlq_operations() = default;

kafka::outbox_producer& dlq_operations::producer_for(const std::string& topic) {
  auto& p = producers_[topic];
  if (!p)
    p = std::make_unique<kafka::outbox_producer>(
      brokers_, topic, delivery_timeout_ms_, "eventforge-dlq-replay");
  return *p;
}

dlq_operations::outcome dlq_operations::replay(std::int64_t id,
                                               const std::string& actor,
                                               const std::string& action) {
  // Step 1: the intent is durable before anything is published. Each
  // consumer decides from its own entry's status, and the record must never
  // overtake that decision: from now on the entry says "replaying", so the
  // consumer that parked it applies the record whenever it arrives.
  std::string refused;
  auto e = store_->begin_replay(id, refused);
  if (!e)
    return {false, refused.empty()
                     ? "no DLQ entry " + std::to_string(id)
                     : "DLQ entry " + std::to_string(id) + " was " + refused};
  return publish_replay(*e, actor, action);
}

dlq_operations::outcome
dlq_operations::publish_replay(const persistence::dlq_entry& e,
                               const std::string& actor,
                               const std::string& action) {
  auto crash_key =
    e.consumer + "/" + chaos_key(e.traceparent, e.event_type, e.event_id);
  crash_site site{e.order_key, is_uuid(e.event_id) ? e.event_id : "",
                  e.consumer};
  if (faults_)
    faults_->check(crash_point::dlq_replay_after_mark_before_publish, crash_key,
                   site);
  // Step 2.
  std::vector<std::pair<std::string, std::string>> headers{
    {record_header::dlq_replay_of, std::to_string(e.id)}};
  if (is_uuid(e.event_id))
    headers.emplace_back(record_header::event_id, e.event_id);
  if (!e.event_type.empty())
    headers.emplace_back(record_header::event_type, e.event_type);
  if (!e.traceparent.empty())
    headers.emplace_back(record_header::traceparent, e.traceparent);
  auto d = producer_for(e.source_topic).publish_raw(e.key, e.value, headers);
  if (!d.persisted) {
    // Maybe written, maybe not: the entry stays "replaying", and the sweep
    // publishes it again (a second copy is suppressed as a duplicate).
    store_->record_action(e.id, action, actor,
                          "not acknowledged: " + d.error +
                            "; stays replaying, published again by the "
                            "DLQ handler");
    return {false,
            "replay of " + std::to_string(e.id) + " not acknowledged: " +
              d.error + "; the entry stays replaying and is published again",
            true};
  }
  if (faults_)
    faults_->check(crash_point::dlq_replay_after_publish_before_mark, crash_key,
                   site);
  // Step 3.
  store_->finish_replay(e.id, d.partition, d.offset, action, actor,
                        "published");
  ef::log::info("dlq: {} entry {} (event {} order {}) by {}", action, e.id,
                e.event_id, e.order_key, actor);
  return {true, "replayed entry " + std::to_string(e.id) + " (event " +
                  e.event_id + ")"};
}

int dlq_operations::sweep_replays(std::chrono::milliseconds grace, int limit) {
  int done = 0;
  for (auto& e : store_->claim_stale_replays(grace, limit)) {
    ef::log::warn("dlq: entry {} (event {} order {}) was left replaying "
                  "(a crash or a failed publish); publishing it again",
                  e.id, e.event_id, e.order_key);
    if (publish_replay(e, "dlq-sweeper", "replay").ok)
      ++done;
  }
  return done;
}

dlq_operations::outcome dlq_operations::discard(std::int64_t id,
                                                const std::string& actor) {
  auto e = store_->get(id);
  if (!e)
    return {false, "no DLQ entry " + std::to_string(id)};
  if (!store_->discard(id, actor)) {
    auto now = store_->get(id);
    return {false, "DLQ entry " + std::to_string(id) + " is " +
                     (now ? now->status : std::string("gone")) +
                     ", only parked entries can be discarded"};
  }
  ef::log::info("dlq: discarded entry {} (event {} order {}) by {}", id,
                e->event_id, e->order_key, actor);
  release_next(e->consumer, e->order_key, actor);
  return {true, "discarded entry " + std::to_string(id)};
}

bool dlq_operations::release_next(const std::string& consumer,
                                  const std::string& order_key,
                                  const std::string& actor) {
  auto next = store_->head_of(consumer, order_key);
  if (!next)
    return false;
  return replay(next->id, actor, "release").ok;
}

} // namespace ef
