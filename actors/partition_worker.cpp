#include "actors/partition_worker.hpp"
#include "actors/crash_log.hpp"

#include "kafka/event_record.hpp"
#include "messages/atoms.hpp"
#include "persistence/db_error.hpp"

#include <spdlog/spdlog.h>

namespace ef {

bool partition_worker_state::apply(const partition_record& rec) {
  auto& consumer = applier->consumer();
  std::string error;
  auto ev = kafka::decode_value(rec.value, rec.key, error);
  if (!ev) {
    // Not an event we can ever apply. Until the DLQ exists it is logged and
    // skipped; it changes nothing in the database.
    spdlog::error("{} p{} offset {}: undecodable record skipped: {}", consumer,
                  partition, rec.offset, error);
    return true;
  }
  try {
    auto outcome = applier->apply(*ev);
    if (outcome == persistence::apply_outcome::order_missing) {
      spdlog::warn("{} p{} offset {}: order {} not found for event {}; "
                   "retrying",
                   consumer, partition, rec.offset, ev->order_id, ev->event_id);
      return false;
    }
    spdlog::debug("{} p{} offset {}: event {} order {} {}", consumer, partition,
                  rec.offset, ev->event_id, ev->order_id, to_string(outcome));
    return true;
  } catch (const persistence::db_error& e) {
    spdlog::warn("{} p{} offset {}: event {} not applied ({}): {}", consumer,
                 partition, rec.offset, ev->event_id, to_string(e.code()),
                 e.what());
    return false;
  }
}

std::chrono::milliseconds
partition_worker_state::drain(caf::event_based_actor* self) {
  while (!pending.empty()) {
    auto& rec = pending.front();
    if (!apply(rec)) {
      ++attempts;
      auto delay = backoff_first * (1 << std::min(attempts - 1, 16));
      return std::min(delay, backoff_max);
    }
    attempts = 0;
    self->send(group_member, record_done{rec.partition, rec.offset});
    pending.pop_front();
  }
  return std::chrono::milliseconds{0};
}

caf::behavior
partition_worker(caf::stateful_actor<partition_worker_state>* self,
                 partition_worker_args args, caf::actor group_member) {
  log_crashes(self,
              args.consumer + " partition " + std::to_string(args.partition));
  auto& st = self->state;
  st.applier =
      std::make_unique<persistence::event_applier>(args.dsn, args.consumer);
  st.group_member = std::move(group_member);
  st.partition = args.partition;
  st.backoff_first = std::chrono::milliseconds(args.backoff_first_ms);
  st.backoff_max = std::chrono::milliseconds(args.backoff_max_ms);
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
