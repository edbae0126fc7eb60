#include "actors/relay_shard.hpp"

#include "actors/crash_log.hpp"
#include "actors/event_log.hpp"
#include "actors/round_loop.hpp"
#include "actors/thread_name.hpp"
#include "messages/ids.hpp"
#include <eventforge/config/logging.hpp>

#include <algorithm>
#include <cmath>

namespace ef {

using namespace std::chrono_literals;
using labels = telemetry::labels;

namespace {

/// How long one step may block in LISTEN before it returns to the mailbox,
/// so exit messages are handled promptly.
constexpr auto listen_slice = 200ms;
/// How often a non-owner checks whether the shard became free.
constexpr auto ownership_retry = 1000ms;
/// How often the lead over the consumers is measured.
constexpr auto lead_check_interval = 250ms;

} // namespace

bool relay_shard_state::too_far_ahead() {
  if (record_bytes <= 0 || !ctx->lead || !ctx->lead_limit)
    return false; // nothing published yet, or no broker to ask
  auto limit = ctx->lead_limit->bytes();
  if (limit <= 0) {
    lead_budget = -1;
    return false; // off
  }
  auto now = clock->now();
  if (now < next_lead_check)
    return !lead_block.empty() || lead_budget == 0;
  next_lead_check = now + lead_check_interval;
  std::vector<kafka::consumer_lead::entry> leads;
  try {
    leads = ctx->lead->current();
  } catch (const std::exception& e) {
    // The broker did not answer (a broker down, a coordinator moving): the
    // last decision stands until it does. Publishing fails the same way if
    // the whole cluster is gone; crashing the relay would only add a
    // restart to the outage.
    ef::log::debug("relay {}: consumer lead unknown ({}); keeping the last "
                   "decision",
                   shard, e.what());
    if (lead_block.empty())
      lead_budget = -1; // not waiting, and no room measured: no share
    return !lead_block.empty();
  }
  std::string why;
  double most_ahead = 0;
  for (auto& x : leads)
    most_ahead =
      std::max(most_ahead, static_cast<double>(x.ahead) * record_bytes);
  // Until the next measurement this relay may add its share of what is left
  // below the limit, and no more: every shard publishes on the same
  // figures, and a whole batch on each could carry the log past the limit.
  lead_budget =
    std::max(0.0, (static_cast<double>(limit) - most_ahead) /
                    static_cast<double>(std::max(1, ctx->cfg.relay.shards)));
  for (auto& x : leads) {
    if (static_cast<double>(x.ahead) * record_bytes <
        static_cast<double>(limit))
      continue;
    why = "partition " + std::to_string(x.partition) + " holds " +
          std::to_string(x.ahead) + " records (~" +
          std::to_string(static_cast<long long>(x.ahead * record_bytes) >> 10) +
          " KiB) beyond " + x.consumer + "'s committed offset " +
          std::to_string(x.read);
    break;
  }
  if (why.empty() != lead_block.empty()) {
    if (why.empty())
      ef::log::info("relay {}: consumers caught up; publishing again", shard);
    else
      ef::log::info("relay {}: {} (relay.max-lead-bytes={}); waiting, the "
                    "outbox keeps the rest",
                    shard, why, limit);
  }
  lead_block = why;
  ctx->metrics->set("relay_waiting_for_consumers",
                    {{"shard", std::to_string(shard)}}, why.empty() ? 0 : 1);
  return !why.empty();
}

std::chrono::milliseconds relay_shard_state::round() {
  // Everything is rebuilt from durable state (the unsent rows of the shard),
  // lazily, so a database outage is a crash inside the loop, not at spawn.
  if (!store)
    store = deps.store();
  if (!producer)
    producer = deps.producer();
  if (!owner) {
    owner = store->try_acquire_shard();
    if (!owner)
      return ownership_retry;
    ef::log::debug("relay {}: acquired shard", shard);
  }
  producer->serve_callbacks();
  auto now = clock->now();
  if (!notified && now < next_query) {
    auto wait = std::min<std::chrono::milliseconds>(
      listen_slice,
      std::chrono::duration_cast<std::chrono::milliseconds>(next_query - now));
    notified = store->await_notify(static_cast<int>(wait.count()));
    return 0ms;
  }
  notified = false;
  next_query = now + poll_interval;
  if (too_far_ahead()) {
    notified = true; // the rows stay unsent (nothing is lost); read again
    return lead_check_interval;
  }
  int limit = batch_size;
  if (lead_budget >= 0 && record_bytes > 0)
    limit = static_cast<int>(std::clamp(std::ceil(lead_budget / record_bytes),
                                        1.0, static_cast<double>(batch_size)));
  auto batch = store->unsent(limit);
  auto& rows = batch.rows;
  if (rows.empty())
    return 0ms;
  // A full batch means more may be waiting: query again right away.
  if (static_cast<int>(rows.size()) == limit)
    notified = true;
  auto claimed_at = std::chrono::steady_clock::now();
  if (!publish(batch.epoch, rows)) {
    notified = true;
    return publish_wait->failed(clock->now());
  }
  publish_wait->succeeded();
  ctx->metrics->observe(
    "relay_claim_to_mark_seconds", {},
    std::chrono::duration<double>(std::chrono::steady_clock::now() - claimed_at)
      .count());
  return 0ms;
}

void relay_shard_state::account_batch(
  const std::vector<persistence::outbox_row>& rows) {
  double bytes = 0;
  for (auto& r : rows)
    // Value (the event as JSON), key and headers, roughly as on the wire.
    bytes += static_cast<double>(
      2 * r.event.event_id.size() + 2 * r.event.order_id.size() +
      r.event.payload.size() + r.event.traceparent.size() + 150);
  auto avg = bytes / static_cast<double>(rows.size());
  record_bytes = record_bytes == 0 ? avg : 0.8 * record_bytes + 0.2 * avg;
  if (lead_budget >= 0)
    lead_budget = std::max(0.0, lead_budget - bytes);
  ctx->metrics->observe("relay_batch_size", {},
                        static_cast<double>(rows.size()));
}

bool relay_shard_state::publish(
  int epoch, const std::vector<persistence::outbox_row>& rows) {
  std::vector<order_event> events;
  events.reserve(rows.size());
  for (auto& r : rows)
    events.push_back(r.event);
  account_batch(rows);
  labels shard_label{{"shard", std::to_string(shard)}};
  // The epoch was read with the rows, before anything is sent: positions are
  // recorded under the broker lifetime they were made in, never a later one.
  auto sent_at = std::chrono::steady_clock::now();
  for (auto& r : rows)
    event_log::hop("claimed", r.event.order_id, r.event.event_id,
                   r.event.traceparent, {{"seq", std::to_string(r.seq)}});
  auto reports = producer->publish(events, [&] {
    for (auto& r : rows)
      event_log::hop("published", r.event.order_id, r.event.event_id,
                     r.event.traceparent);
    faults->after_send(rows);
  });
  ctx->metrics->observe(
    "relay_publish_ack_seconds", {},
    std::chrono::duration<double>(std::chrono::steady_clock::now() - sent_at)
      .count());
  // librdkafka retries inside its delivery timeout, so errors come late or
  // never: the time of the last report is what shows a stall while it lasts.
  ctx->metrics->set("relay_last_delivery_report_timestamp_seconds", {},
                    std::chrono::duration<double>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
  // The seed's relay window: acknowledged, not yet marked.
  faults->after_ack(rows);
  std::vector<persistence::sent_position> acked;
  std::vector<std::int64_t> failed;
  std::string first_error;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (reports[i].persisted) {
      // A failed record followed by a delivered one is a gap: per-order
      // order may be broken on the topic. Never mark past it; fail the
      // relay so it restarts and republishes from the first unsent row.
      if (!failed.empty())
        throw std::runtime_error(
          "relay " + std::to_string(shard) + ": delivery gap after seq " +
          std::to_string(failed.front()) + " (" + first_error + ")");
      acked.push_back({rows[i].seq, reports[i].partition, reports[i].offset,
                       announce(reports[i].partition)});
      ctx->metrics->observe("outbox_publish_delay_seconds", {},
                            seconds_since_rfc3339(rows[i].event.occurred_at));
      event_log::hop("acked", rows[i].event.order_id, rows[i].event.event_id,
                     rows[i].event.traceparent);
    } else {
      if (failed.empty())
        first_error = reports[i].error;
      failed.push_back(rows[i].seq);
    }
  }
  if (store->mark_sent(epoch, acked) ==
      persistence::mark_result::epoch_changed) {
    // The broker lost its logs while this batch was in flight: whatever it
    // acknowledged may be gone too. Publish the rows again in the new epoch.
    ef::log::warn("relay {}: broker epoch changed during a publish; {} "
                  "acknowledged row(s) stay unsent and go out again",
                  shard, acked.size());
    return false;
  }
  for (size_t i = 0; i < acked.size(); ++i)
    event_log::hop("marked", rows[i].event.order_id, rows[i].event.event_id,
                   rows[i].event.traceparent,
                   {{"partition", std::to_string(acked[i].partition)},
                    {"offset", std::to_string(acked[i].offset)}});
  ctx->metrics->add("relay_published_total", shard_label, acked.size());
  if (failed.empty())
    return true;
  ctx->metrics->add("relay_publish_errors_total", shard_label, failed.size());
  ef::log::warn("relay {}: {} of {} records not delivered: {}", shard,
                failed.size(), rows.size(), first_error);
  store->record_failure(failed, first_error);
  return false;
}

bool relay_shard_state::announce(std::int32_t partition) {
  auto park_ms = ctx->cfg.kafka.park_idle_ms;
  if (park_ms <= 0)
    return false; // no consumer parks
  // A consumer parks a partition only after park_ms without a record. If we
  // published there less than half of that ago, it fetched that record (or
  // is about to) and has not parked since: no announcement needed. Other
  // relays' records are not known here, which only means more
  // announcements.
  auto now = clock->now(); // the test clock in deterministic tests
  auto [it, first] = last_published.emplace(partition, now);
  bool quiet =
    first || now - it->second >= std::chrono::milliseconds(park_ms / 2);
  it->second = now;
  return quiet;
}

relay_deps production_relay_deps(const context_ptr& ctx, int shard) {
  relay_deps deps;
  deps.store = [ctx, shard] {
    return std::make_unique<persistence::outbox_store>(
      ctx->dsn, shard,
      ctx->outbox_wakeups->get(ctx->dsn, ctx->cfg.relay.shards));
  };
  deps.producer = [ctx, shard] {
    return std::make_unique<kafka::outbox_producer>(
      ctx->cluster, ctx->cfg.kafka.topic, ctx->cfg.kafka.delivery_timeout_ms,
      "eventforge-relay-" + std::to_string(shard));
  };
  return deps;
}

caf::behavior relay_shard(caf::stateful_actor<relay_shard_state>* self,
                          context_ptr ctx, int shard) {
  auto deps = production_relay_deps(ctx, shard);
  return relay_shard_with(self, std::move(ctx), shard, std::move(deps));
}

caf::behavior relay_shard_with(caf::stateful_actor<relay_shard_state>* self,
                               context_ptr ctx, int shard, relay_deps deps) {
  log_crashes(self, "relay " + std::to_string(shard));
  name_blocking_thread(self, "relay-" + std::to_string(shard));
  auto& st = self->state;
  st.clock = &self->clock();
  st.faults.emplace(ctx->faults);
  st.shard = shard;
  st.deps = std::move(deps);
  st.batch_size = ctx->cfg.relay.batch_size;
  st.poll_interval = std::chrono::milliseconds(ctx->cfg.relay.poll_interval_ms);
  st.publish_wait.emplace(config::publish_backoff(ctx->cfg));
  st.ctx = std::move(ctx);
  // A drain is handled between rounds: the batch in flight is marked.
  return round_loop(self);
}

} // namespace ef
