#include "actors/partition_worker.hpp"

#include "actors/crash_log.hpp"
#include "actors/thread_name.hpp"
#include "kafka/event_record.hpp"
#include "messages/ids.hpp"
#include "messages/record_headers.hpp"
#include "persistence/db_error.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/dlq_messages.hpp>

#include <cerrno>
#include <cstdlib>

namespace ef {

namespace {

using clock = std::chrono::steady_clock;

failure classify(const persistence::db_error& e) {
  using persistence::db_errc;
  return {e.code() == db_errc::permanent ? failure_class::permanent
                                         : failure_class::transient,
          std::string("db_") + to_string(e.code()), e.what(),
          e.code() == db_errc::unavailable || e.code() == db_errc::in_doubt};
}

bool is_replay(const partition_record& rec) {
  return !rec.header(record_header::dlq_replay_of).empty();
}

/// The DLQ entry a replay record is for; 0 if its header is not a number.
std::int64_t replay_entry(const partition_record& rec) {
  auto& v = rec.header(record_header::dlq_replay_of);
  char* end = nullptr;
  errno = 0;
  auto id = std::strtoll(v.c_str(), &end, 10);
  return v.empty() || errno != 0 || *end != '\0' ? 0 : id;
}

double seconds_since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

} // namespace

std::optional<failure>
partition_worker_state::blocked_behind_parked(const order_event& ev,
                                              const partition_record& rec) {
  if (is_replay(rec)) {
    // Ours (attempt() skipped the others'): the head of its order, unless
    // an earlier entry is parked, and then it waits behind that one. An
    // operator never starts such a replay; order holds whoever did.
    auto entry = replay_entry(rec);
    auto head = dlq->waits_behind(entry);
    if (!head)
      return std::nullopt;
    return failure{failure_class::permanent, "parked_behind",
                   "order " + ev.order_id + " has an earlier parked event " +
                     head->event_id + " (DLQ entry " +
                     std::to_string(head->entry_id) +
                     "); the replay of DLQ entry " + std::to_string(entry) +
                     " waits behind it"};
  }
  auto head = dlq->parked_head(ev.order_id);
  if (!head || head->event_id == ev.event_id)
    return std::nullopt; // none, or the head itself again after a crash
  return failure{failure_class::permanent, "parked_behind",
                 "order " + ev.order_id + " has an earlier parked event " +
                   head->event_id + " (DLQ entry " +
                   std::to_string(head->entry_id) + ")"};
}

std::optional<failure>
partition_worker_state::attempt(const partition_record& rec) try {
  notes->attempted();
  // A replay reaches every consumer, and only the one it is for applies
  // it: the others applied the event, parked their own copy (which waits
  // for its own replay) or discarded it, and none of that may depend on a
  // mark that retention can delete. Decided before decoding, so another
  // consumer's undecodable entry parks nothing here.
  bool ours = is_replay(rec) && dlq->replay_is_ours(replay_entry(rec));
  if (is_replay(rec) && !ours) {
    ef::log::info("{}: replay of DLQ entry {} (partition {} offset {}) is "
                  "not this consumer's; skipped",
                  consumer, rec.header(record_header::dlq_replay_of),
                  rec.partition, rec.offset);
    return std::nullopt;
  }
  std::string error;
  auto ev = kafka::decode_value(rec.value, rec.key, error);
  if (!ev)
    return failure{failure_class::permanent, "undecodable", error};
  notes->delivered(*ev, rec);
  if (auto blocked = blocked_behind_parked(*ev, rec))
    return blocked;
  if (faults->poisoned(*ev, rec))
    return failure{failure_class::transient, "injected_fault",
                   "event " + ev->event_id + " is poisoned by a demo scenario"};
  std::vector<delivery> one{{*ev, &rec}};
  auto started = clock::now();
  auto outcome = sink->apply(*ev, [&] { faults->before_db_commit(one); },
                             {rec.partition, rec.offset});
  if (outcome == apply_outcome::order_missing)
    return failure{failure_class::transient, "order_missing",
                   "order " + ev->order_id + " not found"};
  notes->outcome(*ev, outcome, rec, seconds_since(started));
  // The seed's consumer window: committed in the DB, offset not yet.
  if (faults->after_db_before_offset(one) == 0)
    throw injected_crash(crash_point::consumer_after_db_before_offset);
  // A replay for this consumer is through: release the next parked event
  // of its order, so the order's events follow in their original order.
  // Only the consumer it was for: another's replay releases nothing here.
  if (ours && dlq->release_after(replay_entry(rec)))
    ef::log::info("{}: released the next parked event of order {}", consumer,
                  ev->order_id);
  return std::nullopt;
} catch (const persistence::db_error& e) {
  // The DLQ status, the parked-key check, the transaction or the release of
  // the next parked event: whichever read or write failed, the record stays
  // at the front and is tried again.
  return classify(e);
}

size_t partition_worker_state::apply_batch(caf::event_based_actor* self) {
  auto limit =
    std::min(pending.size(), static_cast<size_t>(ctx->cfg.consumer.batch_max));
  if (limit < 2 || !retries->first_failure_at().empty() || singles_left > 0)
    return 0;
  // Only plain deliveries share a transaction; a DLQ replay, a record that
  // cannot be decoded, a poisoned one or one behind a parked event ends the
  // batch and takes the one-at-a-time path with its own rules (a database
  // error in the parked check, too: that path meets it and backs off).
  std::vector<delivery> batch;
  for (size_t i = 0; i < limit && !is_replay(pending[i]); ++i) {
    std::string error; // decode_value also refuses unknown event types
    auto ev = kafka::decode_value(pending[i].value, pending[i].key, error);
    try {
      if (!ev || blocked_behind_parked(*ev, pending[i]) ||
          faults->poisoned(*ev, pending[i]))
        break;
    } catch (const persistence::db_error&) {
      break;
    }
    batch.push_back({std::move(*ev), &pending[i]});
  }
  if (batch.size() < 2)
    return 0;
  std::vector<order_event> evs;
  std::vector<delivery_position> positions;
  for (auto& d : batch) {
    notes->attempted();
    notes->delivered(d.ev, *d.rec);
    evs.push_back(d.ev);
    positions.push_back({d.rec->partition, d.rec->offset});
  }
  auto started = clock::now();
  std::vector<apply_outcome> outcomes;
  try {
    // Each event keeps its own crash decision; any of them rolls back the
    // whole batch, and every record of it is delivered again.
    outcomes = sink->apply_batch(evs, positions,
                                 [&] { faults->before_db_commit(batch); });
  } catch (const persistence::db_error& e) {
    ef::log::info("{} p{}: a batch of {} records failed ({}: {}); applying "
                  "them one at a time",
                  consumer, partition, batch.size(), to_string(e.code()),
                  e.what());
    singles_left = batch.size();
    return 0;
  }
  ctx->metrics->observe("consumer_batch_size", {{"consumer", consumer}},
                        static_cast<double>(outcomes.size()));
  auto took = seconds_since(started);
  batch.resize(outcomes.size()); // it stopped before a missing order
  for (size_t i = 0; i < outcomes.size(); ++i)
    notes->outcome(batch[i].ev, outcomes[i], *batch[i].rec, took);
  // Committed in the DB, offsets not yet: the first crash decision stops
  // the actor before the records from it on are reported done.
  auto crash_at = faults->after_db_before_offset(batch);
  for (size_t i = 0; i < crash_at; ++i)
    finish_front(self);
  if (crash_at < outcomes.size())
    throw injected_crash(crash_point::consumer_after_db_before_offset);
  return outcomes.size();
}

void partition_worker_state::finish_front(caf::event_based_actor* self) {
  notes->before_offset_moves();
  auto& rec = pending.front();
  self->send(group_member, record_done{rec.partition, rec.offset, rec.key,
                                       rec.event_id_header,
                                       rec.header(record_header::traceparent)});
  pending.pop_front();
}

std::chrono::milliseconds
partition_worker_state::work(caf::event_based_actor* self) {
  while (!pending.empty()) {
    if (apply_batch(self) > 0)
      continue;
    auto& rec = pending.front();
    if (auto fail = attempt(rec)) {
      auto verdict = retries->failed(*fail, rec.offset, self->clock().now());
      if (!verdict.park) {
        ctx->metrics->add("consumer_retries_total", {{"consumer", consumer}});
        return verdict.wait;
      }
      std::string error;
      auto ev = kafka::decode_value(rec.value, rec.key, error);
      // A replay reaching here is ours (attempt() skipped the others').
      auto parked =
        dlq->park(rec, ev ? &*ev : nullptr, *fail, retries->attempts(),
                  retries->first_failure_at(), replay_entry(rec));
      if (parked == parking::parked::not_stored)
        return verdict.wait; // the DLQ is unreachable: keep the record
    }
    retries->succeeded(rec.offset);
    if (singles_left > 0)
      --singles_left;
    finish_front(self);
  }
  return std::chrono::milliseconds{0};
}

caf::behavior
partition_worker_with(caf::stateful_actor<partition_worker_state>* self,
                      context_ptr ctx, std::string consumer,
                      std::int32_t partition, caf::actor group_member,
                      partition_worker_deps deps) {
  log_crashes(self, consumer + " partition " + std::to_string(partition));
  name_blocking_thread(self, consumer.substr(0, 8) + "-p" +
                               std::to_string(partition));
  auto& st = self->state;
  st.faults.emplace(ctx->faults, consumer);
  st.notes.emplace(ctx, consumer, partition);
  st.sink = deps.sink();
  st.dlq = deps.dlq(*st.faults);
  st.retries.emplace(ctx->cfg, consumer + " p" + std::to_string(partition));
  st.ctx = std::move(ctx);
  st.group_member = std::move(group_member);
  st.consumer = std::move(consumer);
  st.partition = partition;
  auto step = [self] {
    auto& st = self->state;
    auto delay = st.work(self);
    if (delay.count() > 0) {
      st.waiting_for_retry = true;
      self->delayed_send(self, delay, retry_atom::value);
    }
  };
  return {
    [=](partition_record& rec) {
      auto& st = self->state;
      st.pending.push_back(std::move(rec));
      if (st.waiting_for_retry || st.work_scheduled)
        return;
      // Queues behind the records already in the mailbox: they join the
      // queue first and can share one transaction.
      st.work_scheduled = true;
      self->send(self, flush_atom::value);
    },
    [=](flush_atom) {
      self->state.work_scheduled = false;
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
