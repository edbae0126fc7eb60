#include "actors/partition_worker.hpp"

#include "actors/crash_log.hpp"
#include "kafka/event_record.hpp"
#include "messages/atoms.hpp"
#include "persistence/db_error.hpp"

#include <spdlog/spdlog.h>

namespace ef {

bool partition_worker_state::apply(const partition_record& rec) {
  telemetry::labels who{{"consumer", consumer}};
  ctx->metrics->add("consumer_deliveries_total", who);
  std::string error;
  auto ev = kafka::decode_value(rec.value, rec.key, error);
  if (!ev) {
    // Not an event we can ever apply. Until the DLQ exists it is logged and
    // skipped; it changes nothing in the database.
    ctx->metrics->add("consumer_undecodable_total", who);
    spdlog::error("{} p{} offset {}: undecodable record skipped: {}", consumer,
                  partition, rec.offset, error);
    return true;
  }
  // Each consumer is its own actor: it gets its own crash decisions.
  auto chaos_key = consumer + "/" + ev->event_id;
  try {
    auto outcome = applier->apply(*ev, [&] {
      ctx->faults->check(crash_point::consumer_before_db_commit, chaos_key);
    });
    switch (outcome) {
    case persistence::apply_outcome::order_missing:
      ctx->metrics->add("consumer_retries_total", who);
      spdlog::warn("{} p{} offset {}: order {} not found for event {}; "
                   "retrying",
                   consumer, partition, rec.offset, ev->order_id, ev->event_id);
      return false;
    case persistence::apply_outcome::duplicate:
      ctx->metrics->add("consumer_duplicates_suppressed_total", who);
      break;
    case persistence::apply_outcome::applied:
      ctx->metrics->add("consumer_applied_total", who);
      break;
    }
    spdlog::debug("{} p{} offset {}: event {} order {} {}", consumer, partition,
                  rec.offset, ev->event_id, ev->order_id, to_string(outcome));
    // The seed's consumer window: committed in the DB, offset not yet.
    ctx->faults->check(crash_point::consumer_after_db_before_offset, chaos_key);
    return true;
  } catch (const persistence::db_error& e) {
    ctx->metrics->add("consumer_retries_total", who);
    spdlog::warn("{} p{} offset {}: event {} not applied ({}): {}", consumer,
                 partition, rec.offset, ev->event_id, to_string(e.code()),
                 e.what());
    return false;
  }
}

std::chrono::milliseconds
partition_worker_state::drain(caf::event_based_actor* self) {
  auto& c = ctx->cfg.consumer;
  while (!pending.empty()) {
    auto& rec = pending.front();
    if (!apply(rec)) {
      ++attempts;
      auto delay = std::chrono::milliseconds(c.retry_backoff_ms) *
                   (1 << std::min(attempts - 1, 16));
      return std::min(delay, std::chrono::milliseconds(c.retry_backoff_max_ms));
    }
    attempts = 0;
    self->send(group_member, record_done{rec.partition, rec.offset});
    pending.pop_front();
  }
  return std::chrono::milliseconds{0};
}

caf::behavior
partition_worker(caf::stateful_actor<partition_worker_state>* self,
                 context_ptr ctx, std::string consumer, std::int32_t partition,
                 caf::actor group_member) {
  log_crashes(self, consumer + " partition " + std::to_string(partition));
  auto& st = self->state;
  st.applier = std::make_unique<persistence::event_applier>(ctx->dsn, consumer);
  st.ctx = std::move(ctx);
  st.group_member = std::move(group_member);
  st.consumer = std::move(consumer);
  st.partition = partition;
  auto step = [self] {
    auto& st = self->state;
    auto delay = st.drain(self);
    if (delay.count() > 0) {
      st.waiting_for_retry = true;
      self->delayed_send(self, delay, retry_atom::value);
    }
  };
  return {
    [=](partition_record& rec) {
      self->state.pending.push_back(std::move(rec));
      if (!self->state.waiting_for_retry)
        step();
    },
    [=](retry_atom) {
      self->state.waiting_for_retry = false;
      step();
    },
  };
}

} // namespace ef
