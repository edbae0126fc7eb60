#include "actors/partition_worker.hpp"

#include "actors/crash_log.hpp"
#include "actors/event_log.hpp"
#include "config/options.hpp"
#include "kafka/event_record.hpp"
#include "messages/atoms.hpp"
#include "messages/dlq_messages.hpp"
#include "messages/ids.hpp"
#include "messages/record_headers.hpp"
#include "persistence/db_error.hpp"

#include <spdlog/spdlog.h>

#include <cctype>
#include <cmath>
#include <ctime>
#include <random>

namespace ef {

namespace {

/// Seconds from an RFC 3339 UTC timestamp ("...T..:..:..[.ffffff]Z") until
/// now; 0 if it cannot be parsed.
double seconds_since(const std::string& rfc3339) {
  std::tm tm{};
  int frac_digits = 0;
  long frac = 0;
  if (std::sscanf(rfc3339.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year,
                  &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec) != 6)
    return 0;
  auto dot = rfc3339.find('.');
  if (dot != std::string::npos)
    for (size_t i = dot + 1;
         i < rfc3339.size() &&
         std::isdigit(static_cast<unsigned char>(rfc3339[i]));
         ++i, ++frac_digits)
      frac = frac * 10 + (rfc3339[i] - '0');
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  double at = static_cast<double>(timegm(&tm)) +
              static_cast<double>(frac) / std::pow(10.0, frac_digits);
  auto now = std::chrono::duration<double>(
               std::chrono::system_clock::now().time_since_epoch())
               .count();
  return now > at ? now - at : 0;
}

failure classify(const persistence::db_error& e) {
  using persistence::db_errc;
  auto kind = std::string("db_") + to_string(e.code());
  return {e.code() == db_errc::permanent ? failure_class::permanent
                                         : failure_class::transient,
          kind, e.what(),
          e.code() == db_errc::unavailable || e.code() == db_errc::in_doubt};
}

} // namespace

bool partition_worker_state::blocked_behind_parked(const order_event& ev,
                                                   const partition_record& rec,
                                                   failure& why) {
  if (!parked_orders)
    parked_orders = dlq->store().parked_orders(consumer);
  if (parked_orders->count(ev.order_id) == 0)
    return false;
  auto head = dlq->store().head_of(consumer, ev.order_id);
  if (!head) {
    parked_orders->erase(ev.order_id); // resolved meanwhile
    return false;
  }
  // An operator's replay goes through, whatever is parked.
  if (!rec.header(record_header::dlq_replay_of).empty())
    return false;
  if (head->event_id == ev.event_id)
    return false; // redelivery of the head itself after a crash
  why = {failure_class::permanent, "parked_behind",
         "order " + ev.order_id + " has an earlier parked event " +
           head->event_id + " (DLQ entry " + std::to_string(head->id) + ")"};
  return true;
}

std::optional<failure>
partition_worker_state::attempt(const partition_record& rec) {
  try {
    return attempt_unguarded(rec);
  } catch (const persistence::db_error& e) {
    // The DLQ status, the parked-key check, the transaction or the release
    // of the next parked event: whichever read or write failed, the record
    // stays at the front and is tried again.
    return classify(e);
  }
}

std::optional<failure>
partition_worker_state::attempt_unguarded(const partition_record& rec) {
  telemetry::labels who{{"consumer", consumer}};
  ctx->metrics->add("consumer_deliveries_total", who);
  std::string error;
  auto ev = kafka::decode_value(rec.value, rec.key, error);
  if (!ev)
    return failure{failure_class::permanent, "undecodable", error};
  if (!rec.header(record_header::dlq_replay_of).empty()) {
    // A replay reaches every consumer; each decides by its own DLQ entry.
    auto own = dlq->store().status_of(consumer, ev->event_id);
    if (own == std::string(dlq_status::discarded) ||
        own == std::string(dlq_status::parked)) {
      // Discarded here: never applied. Still parked here: the replay was
      // another consumer's; this consumer's copy waits for its own.
      spdlog::info("{}: replay of event {} skipped (own entry {})", consumer,
                   ev->event_id, *own);
      return std::nullopt;
    }
  }
  auto& trace = rec.header(record_header::traceparent);
  log_delivered(*ev, rec);
  failure blocked;
  if (blocked_behind_parked(*ev, rec, blocked))
    return blocked;
  // Each consumer is its own actor: it gets its own crash decisions.
  auto crash_key =
    consumer + "/" + chaos_key(trace, ev->event_type, ev->event_id);
  crash_site site{ev->order_id, ev->event_id, consumer};
  // A demo scenario's poison: fails like a database that keeps refusing it,
  // until it is parked; its DLQ replay goes through.
  if (rec.header(record_header::dlq_replay_of).empty() &&
      ctx->faults->poisoned(crash_key))
    return failure{failure_class::transient, "injected_fault",
                   "event " + ev->event_id + " is poisoned by a demo scenario"};
  auto started = std::chrono::steady_clock::now();
  auto outcome =
    applier->apply(*ev,
                   [&] {
                     ctx->faults->check(crash_point::consumer_before_db_commit,
                                        crash_key, site);
                   },
                   {rec.partition, rec.offset});
  if (outcome == apply_outcome::order_missing)
    return failure{failure_class::transient, "order_missing",
                   "order " + ev->order_id + " not found"};
  note(*ev, outcome, rec);
  ctx->metrics->observe(
    "consumer_handler_seconds", who,
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
      .count());
  // The seed's consumer window: committed in the DB, offset not yet.
  ctx->faults->check(crash_point::consumer_after_db_before_offset, crash_key,
                     site);
  // A replayed head is through: release the next parked event of its order,
  // so the order's events follow in their original order.
  if (!rec.header(record_header::dlq_replay_of).empty() &&
      dlq->release_next(consumer, ev->order_id, "release:" + consumer))
    spdlog::info("{}: released the next parked event of order {}", consumer,
                 ev->order_id);
  return std::nullopt;
}

void partition_worker_state::log_delivered(const order_event& ev,
                                           const partition_record& rec) {
  event_log::hop("delivered", ev.order_id, ev.event_id,
                 rec.header(record_header::traceparent),
                 {{"consumer", consumer},
                  {"partition", std::to_string(rec.partition)},
                  {"offset", std::to_string(rec.offset)}});
}

void partition_worker_state::finish_front(caf::event_based_actor* self) {
  // Once its offset is committed nothing tells of a suppressed delivery but
  // its journal line: write it first (rare: only after a redelivery). A
  // journal that cannot write within the bound does not hold the partition.
  if (journal_unflushed) {
    journal_unflushed = false;
    if (!ctx->journal->flush(std::chrono::seconds(1)))
      spdlog::warn("{} p{}: recovery journal lines still waiting for the "
                   "database; committing the offset anyway",
                   consumer, partition);
  }
  auto& rec = pending.front();
  self->send(group_member, record_done{rec.partition, rec.offset, rec.key,
                                       rec.event_id_header,
                                       rec.header(record_header::traceparent)});
  pending.pop_front();
}

void partition_worker_state::note(const order_event& ev, apply_outcome outcome,
                                  const partition_record& rec) {
  telemetry::labels who{{"consumer", consumer}};
  auto& trace = rec.header(record_header::traceparent);
  switch (outcome) {
  case apply_outcome::order_missing:
    break; // a failure: the caller retries it
  case apply_outcome::duplicate:
    ctx->metrics->add("consumer_duplicates_suppressed_total", who);
    if (ctx->journal) {
      persistence::journal_line line;
      line.what = persistence::journal_line::kind::suppressed;
      line.actor = consumer + " p" + std::to_string(partition);
      line.consumer = consumer;
      line.order_id = ev.order_id;
      line.event_id = ev.event_id;
      line.partition = rec.partition;
      line.offset = rec.offset;
      ctx->journal->record(std::move(line));
      journal_unflushed = true;
    }
    event_log::hop("suppressed", ev.order_id, ev.event_id, trace,
                   {{"consumer", consumer}});
    break;
  case apply_outcome::deferred:
    // Not applied, not lost: it comes again behind its predecessors.
    ctx->metrics->add("consumer_deferred_total", who);
    event_log::hop("deferred", ev.order_id, ev.event_id, trace,
                   {{"consumer", consumer}});
    spdlog::info("{}: event {} of order {} waits for an earlier event of "
                 "its order; both are queued again",
                 consumer, ev.event_id, ev.order_id);
    break;
  case apply_outcome::applied:
    ctx->metrics->add("consumer_applied_total", who);
    event_log::hop("applied", ev.order_id, ev.event_id, trace,
                   {{"consumer", consumer}});
    ctx->metrics->observe("end_to_end_seconds", who,
                          seconds_since(ev.occurred_at));
    break;
  }
}

bool partition_worker_state::blocked_behind_parked_or_unknown(
  const order_event& ev, const partition_record& rec) {
  try {
    failure ignored;
    return blocked_behind_parked(ev, rec, ignored);
  } catch (const persistence::db_error&) {
    return true; // the one-at-a-time path meets the error and backs off
  }
}

size_t partition_worker_state::apply_batch(caf::event_based_actor* self) {
  auto limit =
    std::min(pending.size(), static_cast<size_t>(ctx->cfg.consumer.batch_max));
  if (limit < 2 || attempts > 0 || singles_left > 0)
    return 0;
  // Only plain deliveries share a transaction; a DLQ replay, a record that
  // cannot be decoded or one behind a parked event ends the batch and takes
  // the one-at-a-time path with its own rules.
  std::vector<order_event> evs;
  std::vector<delivery_position> positions;
  for (size_t i = 0; i < limit; ++i) {
    auto& rec = pending[i];
    if (!rec.header(record_header::dlq_replay_of).empty())
      break;
    std::string error; // decode_value also refuses unknown event types
    auto ev = kafka::decode_value(rec.value, rec.key, error);
    if (!ev || blocked_behind_parked_or_unknown(*ev, rec) ||
        ctx->faults->poisoned(consumer + "/" +
                              chaos_key(rec.header(record_header::traceparent),
                                        ev->event_type, ev->event_id)))
      break;
    evs.push_back(std::move(*ev));
    positions.push_back({rec.partition, rec.offset});
  }
  if (evs.size() < 2)
    return 0;
  telemetry::labels who{{"consumer", consumer}};
  std::vector<std::string> crash_keys;
  std::vector<crash_site> sites;
  for (size_t i = 0; i < evs.size(); ++i) {
    sites.push_back({evs[i].order_id, evs[i].event_id, consumer});
    auto& rec = pending[i];
    ctx->metrics->add("consumer_deliveries_total", who);
    log_delivered(evs[i], rec);
    crash_keys.push_back(consumer + "/" +
                         chaos_key(rec.header(record_header::traceparent),
                                   evs[i].event_type, evs[i].event_id));
  }
  auto started = std::chrono::steady_clock::now();
  std::vector<apply_outcome> outcomes;
  try {
    outcomes = applier->apply_batch(evs, positions, [&] {
      // Each event keeps its own crash decision; any of them rolls back the
      // whole batch, and every record of it is delivered again.
      for (size_t i = 0; i < crash_keys.size(); ++i)
        ctx->faults->check(crash_point::consumer_before_db_commit,
                           crash_keys[i], sites[i]);
    });
  } catch (const persistence::db_error& e) {
    spdlog::info("{} p{}: a batch of {} records failed ({}: {}); applying "
                 "them one at a time",
                 consumer, partition, evs.size(), to_string(e.code()),
                 e.what());
    singles_left = evs.size();
    return 0;
  }
  ctx->metrics->observe("consumer_batch_size", who,
                        static_cast<double>(outcomes.size()));
  auto took =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
      .count();
  for (size_t i = 0; i < outcomes.size(); ++i) {
    note(evs[i], outcomes[i], pending[i]);
    ctx->metrics->observe("consumer_handler_seconds", who, took);
  }
  // Committed in the DB, offsets not yet. Every event of the batch reaches
  // this point now, as it would have right after its own commit, so each
  // gets its crash decision whatever the batch looked like; the first
  // crash stops the actor before the records from it on are reported done.
  auto crash_at = outcomes.size();
  for (size_t i = 0; i < outcomes.size(); ++i)
    if (ctx->faults->fires(crash_point::consumer_after_db_before_offset,
                           crash_keys[i], sites[i]) &&
        crash_at == outcomes.size())
      crash_at = i;
  for (size_t i = 0; i < crash_at; ++i)
    finish_front(self);
  if (crash_at < outcomes.size())
    throw injected_crash(crash_point::consumer_after_db_before_offset);
  return outcomes.size();
}

bool partition_worker_state::park(const partition_record& rec,
                                  const order_event* ev, const failure& why) {
  persistence::dlq_entry e;
  e.consumer = consumer;
  e.event_id = ev ? ev->event_id
                  : "offset:" + std::to_string(rec.partition) + ":" +
                      std::to_string(rec.offset);
  e.order_key = rec.key;
  e.key = rec.key;
  e.value = rec.value;
  e.traceparent = rec.header(record_header::traceparent);
  e.event_type = ev ? ev->event_type : "";
  e.error_class = why.kind;
  e.error_message = why.message;
  e.attempts = attempts;
  e.source_topic = ctx->cfg.kafka.topic;
  e.source_partition = rec.partition;
  e.source_offset = rec.offset;
  e.first_failure_at = first_failure_at;
  e.last_failure_at = now_rfc3339();
  if (!dlq_producer)
    dlq_producer = std::make_unique<kafka::outbox_producer>(
      ctx->brokers, config::dlq_topic_of(ctx->cfg),
      ctx->cfg.kafka.delivery_timeout_ms, "eventforge-dlq-" + consumer);
  auto d = dlq_producer->publish_raw(
    rec.key, rec.value,
    {{record_header::event_id, ev ? ev->event_id : rec.event_id_header},
     {record_header::dlq_source_topic, e.source_topic},
     {record_header::dlq_source_partition, std::to_string(rec.partition)},
     {record_header::dlq_source_offset, std::to_string(rec.offset)},
     {record_header::dlq_consumer, consumer},
     {record_header::dlq_error_class, why.kind},
     {record_header::dlq_error_message, why.message},
     {record_header::dlq_attempts, std::to_string(attempts)},
     {record_header::dlq_first_failure, e.first_failure_at},
     {record_header::dlq_last_failure, e.last_failure_at},
     {record_header::traceparent, e.traceparent}});
  if (!d.persisted) {
    spdlog::warn("{} p{} offset {}: DLQ produce not acknowledged ({}); the "
                 "offset stays",
                 consumer, partition, rec.offset, d.error);
    return false;
  }
  // Acked by the DLQ, offset not yet committed.
  ctx->faults->check(crash_point::dlq_after_dlq_ack_before_offset,
                     consumer + "/" +
                       chaos_key(rec.header(record_header::traceparent),
                                 e.event_type, e.event_id),
                     {rec.key, ev ? ev->event_id : "", consumer});
  try {
    dlq->store().park(e, true);
  } catch (const persistence::db_error& err) {
    // The DLQ holds a copy; the entry is stored when the record is tried
    // again (the copy's reader will not store it for an event that gets
    // applied meanwhile: dlq_store::park).
    spdlog::warn("{} p{} offset {}: DLQ entry not stored ({}); the offset "
                 "stays",
                 consumer, partition, rec.offset, err.what());
    return false;
  }
  if (parked_orders)
    parked_orders->insert(rec.key);
  event_log::hop("parked", rec.key, e.event_id,
                 rec.header(record_header::traceparent),
                 {{"consumer", consumer}, {"class", why.kind}});
  ctx->metrics->add("dlq_parked_total",
                    {{"consumer", consumer}, {"class", why.kind}});
  spdlog::warn("{} p{} offset {}: event {} parked in the DLQ after {} "
               "attempt(s): {}: {}",
               consumer, partition, rec.offset, e.event_id, attempts, why.kind,
               why.message);
  return true;
}

std::chrono::milliseconds
partition_worker_state::drain(caf::event_based_actor* self) {
  while (!pending.empty()) {
    if (apply_batch(self) > 0)
      continue;
    auto& rec = pending.front();
    auto fail = attempt(rec);
    if (fail) {
      // Exponential, with jitter, so retries of many partitions after one
      // outage do not arrive in lockstep.
      auto delay = retry_wait->failed();
      if (first_failure_at.empty())
        first_failure_at = now_rfc3339();
      if (fail->outage) {
        ctx->metrics->add("consumer_retries_total", {{"consumer", consumer}});
        // Once per outage at warn; its later retries only at debug.
        spdlog::log(in_outage ? spdlog::level::debug : spdlog::level::warn,
                    "{} p{} offset {}: {}; retrying every {} ms or less "
                    "while the database is unavailable (not counted "
                    "against consumer.max-attempts)",
                    consumer, partition, rec.offset, fail->message,
                    ctx->cfg.consumer.backoff_max_ms);
        in_outage = true;
        return delay;
      }
      ++attempts;
      bool exhausted = fail->cls == failure_class::permanent ||
                       attempts >= ctx->cfg.consumer.max_attempts;
      if (!exhausted) {
        ctx->metrics->add("consumer_retries_total", {{"consumer", consumer}});
        spdlog::info("{} p{} offset {}: attempt {} failed ({}: {}); retrying",
                     consumer, partition, rec.offset, attempts, fail->kind,
                     fail->message);
        return delay;
      }
      std::string error;
      auto ev = kafka::decode_value(rec.value, rec.key, error);
      if (!park(rec, ev ? &*ev : nullptr, *fail))
        return delay; // the DLQ is unreachable: keep the record
    }
    if (in_outage) {
      spdlog::info("{} p{}: the database is back; offset {} is through",
                   consumer, partition, rec.offset);
      in_outage = false;
    }
    attempts = 0;
    retry_wait->succeeded();
    first_failure_at.clear();
    if (singles_left > 0)
      --singles_left;
    finish_front(self);
  }
  return std::chrono::milliseconds{0};
}

caf::behavior
partition_worker(caf::stateful_actor<partition_worker_state>* self,
                 context_ptr ctx, std::string consumer, std::int32_t partition,
                 caf::actor group_member) {
  log_crashes(self, consumer + " partition " + std::to_string(partition));
  auto& st = self->state;
  st.applier =
    std::make_unique<event_applier>(ctx->dsn, ctx->consumers.at(consumer));
  st.dlq = std::make_unique<dlq_operations>(
    ctx->dsn, ctx->brokers, ctx->cfg.kafka.delivery_timeout_ms, ctx->faults);
  st.retry_wait.emplace(config::retry_backoff(ctx->cfg));
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
      auto& st = self->state;
      st.pending.push_back(std::move(rec));
      if (st.waiting_for_retry || st.drain_scheduled)
        return;
      // Queues behind the records already in the mailbox: they join the
      // queue first and can share one transaction.
      st.drain_scheduled = true;
      self->send(self, flush_atom::value);
    },
    [=](flush_atom) {
      self->state.drain_scheduled = false;
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
