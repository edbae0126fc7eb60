#include "actors/dlq_operations.hpp"

#include "messages/dlq_messages.hpp"
#include "messages/ids.hpp"
#include "messages/record_headers.hpp"

#include <spdlog/spdlog.h>

namespace ef {

dlq_operations::dlq_operations(std::string dsn, std::string brokers,
                               int delivery_timeout_ms)
    : brokers_(std::move(brokers)), delivery_timeout_ms_(delivery_timeout_ms),
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
  auto e = store_->get(id);
  if (!e)
    return {false, "no DLQ entry " + std::to_string(id)};
  if (e->status == dlq_status::discarded)
    return {false, "DLQ entry " + std::to_string(id) + " was discarded"};
  std::vector<std::pair<std::string, std::string>> headers{
    {record_header::dlq_replay_of, std::to_string(id)}};
  if (is_uuid(e->event_id))
    headers.emplace_back(record_header::event_id, e->event_id);
  if (!e->event_type.empty())
    headers.emplace_back(record_header::event_type, e->event_type);
  // Marked replayed BEFORE publishing: each consumer decides from its own
  // entry's status, and the record must not overtake that decision.
  store_->set_status(id, dlq_status::replayed);
  auto d =
    producer_for(e->source_topic).publish_raw(e->order_key, e->value, headers);
  if (!d.persisted) {
    store_->resolve(id, e->status, action, actor, "failed: " + d.error);
    return {false, "replay of " + std::to_string(id) +
                     " not acknowledged: " + d.error};
  }
  store_->resolve(id, dlq_status::replayed, action, actor, "published");
  spdlog::info("dlq: {} entry {} (event {} order {}) by {}", action, id,
               e->event_id, e->order_key, actor);
  return {true, "replayed entry " + std::to_string(id) + " (event " +
                  e->event_id + ")"};
}

dlq_operations::outcome dlq_operations::discard(std::int64_t id,
                                                const std::string& actor) {
  auto e = store_->get(id);
  if (!e)
    return {false, "no DLQ entry " + std::to_string(id)};
  if (e->status != dlq_status::parked)
    return {false, "DLQ entry " + std::to_string(id) + " is " + e->status +
                     ", only parked entries can be discarded"};
  store_->resolve(id, dlq_status::discarded, "discard", actor, "discarded");
  spdlog::info("dlq: discarded entry {} (event {} order {}) by {}", id,
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
