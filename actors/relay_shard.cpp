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

namespace {

/// How long one step may block in LISTEN before it returns to the mailbox,
/// so exit messages are handled promptly.
constexpr auto listen_slice = 200ms;
/// How often a non-owner checks whether the shard became free.
constexpr auto ownership_retry = 1000ms;
/// How long one step waits for delivery reports while rows are in flight,
/// before it looks at the NOTIFY channel again.
constexpr int report_slice_ms = 10;

} // namespace

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
  settle(window.empty() ? 0 : report_slice_ms);
  if (!failed.empty() || window.failing())
    return after_failure();
  auto now = clock->now();
  if (!notified && now < next_query) {
    auto wait = std::min<std::chrono::milliseconds>(
      listen_slice,
      std::chrono::duration_cast<std::chrono::milliseconds>(next_query - now));
    // Rows in flight: alternate between their reports and the NOTIFY.
    if (!window.empty())
      wait = std::min<std::chrono::milliseconds>(
        wait, std::chrono::milliseconds(report_slice_ms));
    notified = store->await_notify(static_cast<int>(wait.count()));
    return 0ms;
  }
  notified = false;
  next_query = now + poll_interval;
  if (too_far_ahead()) {
    notified = true; // the rows stay unsent (nothing is lost); read again
    return lead_check_interval;
  }
  send_next();
  return 0ms;
}

std::chrono::milliseconds relay_shard_state::finish_round() {
  settle(report_slice_ms);
  return 0ms;
}

void relay_shard_state::send_next() {
  auto room = ctx->cfg.relay.max_in_flight - static_cast<int>(window.size());
  if (room <= 0) {
    notified = true; // read again once reports made room
    return;
  }
  int limit = std::min(batch_size, room);
  if (lead_budget >= 0 && record_bytes > 0)
    limit = static_cast<int>(std::clamp(std::ceil(lead_budget / record_bytes),
                                        1.0, static_cast<double>(limit)));
  auto batch = store->unsent(limit, window.seqs());
  auto& rows = batch.rows;
  if (rows.empty())
    return;
  // A full batch means more may be waiting: query again right away.
  if (static_cast<int>(rows.size()) == limit)
    notified = true;
  account_batch(rows);
  std::vector<order_event> events;
  events.reserve(rows.size());
  for (auto& r : rows) {
    events.push_back(r.event);
    event_log::hop("claimed", r.event.order_id, r.event.event_id,
                   r.event.traceparent, {{"seq", std::to_string(r.seq)}});
  }
  // The epoch was read with the rows, before anything is sent: positions are
  // recorded under the broker lifetime they were made in, never a later one.
  window.sent(batch.epoch, rows, next_ticket, std::chrono::steady_clock::now());
  producer->send(events, next_ticket);
  next_ticket += rows.size();
  for (auto& r : rows)
    event_log::hop("published", r.event.order_id, r.event.event_id,
                   r.event.traceparent);
  faults->after_send(rows);
}

void relay_shard_state::settle(int wait_ms) {
  auto reports = producer->reports(wait_ms);
  if (reports.empty())
    return;
  auto now = std::chrono::steady_clock::now();
  // librdkafka retries inside its delivery timeout, so errors come late or
  // never: the time of the last report is what shows a stall while it lasts.
  ctx->metrics->set("relay_last_delivery_report_timestamp_seconds", {},
                    std::chrono::duration<double>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
  relay_window::settlement s;
  try {
    s = window.settle(std::move(reports));
  } catch (const std::exception& e) {
    // The topic may hold an order's rows out of order: restart, and
    // republish from the first unsent row.
    throw std::runtime_error("relay " + std::to_string(shard) + ": " +
                             e.what());
  }
  if (first_error.empty())
    first_error = s.first_error;
  failed.insert(failed.end(), s.failed.begin(), s.failed.end());
  if (s.acked.empty())
    return;
  std::vector<persistence::outbox_row> rows;
  for (auto& a : s.acked)
    rows.push_back(a.row);
  // The seed's relay window: acknowledged, not yet marked.
  faults->after_ack(rows);
  if (!mark(s.acked)) {
    failed.push_back(-1); // nothing to count, but back off and read again
    return;
  }
  auto oldest = s.acked.front().claimed_at;
  for (auto& a : s.acked)
    oldest = std::min(oldest, a.claimed_at);
  ctx->metrics->observe("relay_publish_ack_seconds", {},
                        std::chrono::duration<double>(now - oldest).count());
  ctx->metrics->observe(
    "relay_claim_to_mark_seconds", {},
    std::chrono::duration<double>(std::chrono::steady_clock::now() - oldest)
      .count());
  if (failed.empty() && !window.failing())
    publish_wait->succeeded();
}

bool relay_shard_state::mark(
  const std::vector<relay_window::acked_row>& acked) {
  std::map<int, std::vector<persistence::sent_position>> by_epoch;
  for (auto& a : acked) {
    by_epoch[a.epoch].push_back(
      {a.row.seq, a.partition, a.offset, announce(a.partition)});
    ctx->metrics->observe("outbox_publish_delay_seconds", {},
                          seconds_since_rfc3339(a.row.event.occurred_at));
    event_log::hop("acked", a.row.event.order_id, a.row.event.event_id,
                   a.row.event.traceparent);
  }
  for (auto& [epoch, positions] : by_epoch)
    if (store->mark_sent(epoch, positions) ==
        persistence::mark_result::epoch_changed) {
      // The broker lost its logs while these rows were in flight: whatever
      // it acknowledged may be gone too. They go out again in the new epoch.
      ef::log::warn("relay {}: broker epoch changed during a publish; {} "
                    "acknowledged row(s) stay unsent and go out again",
                    shard, positions.size());
      return false;
    }
  for (auto& a : acked)
    event_log::hop("marked", a.row.event.order_id, a.row.event.event_id,
                   a.row.event.traceparent,
                   {{"partition", std::to_string(a.partition)},
                    {"offset", std::to_string(a.offset)}});
  ctx->metrics->add("relay_published_total", {{"shard", std::to_string(shard)}},
                    acked.size());
  return true;
}

std::chrono::milliseconds relay_shard_state::after_failure() {
  if (!window.empty())
    return 0ms; // the rest of the window still reports; nothing new is sent
  window.forgive();
  std::vector<std::int64_t> seqs;
  for (auto seq : failed)
    if (seq > 0)
      seqs.push_back(seq);
  failed.clear();
  if (!seqs.empty()) {
    ctx->metrics->add("relay_publish_errors_total",
                      {{"shard", std::to_string(shard)}}, seqs.size());
    ef::log::warn("relay {}: {} record(s) not delivered: {}", shard,
                  seqs.size(), first_error);
    store->record_failure(seqs, first_error);
  }
  first_error.clear();
  notified = true;
  return publish_wait->failed(clock->now());
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
