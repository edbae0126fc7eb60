#include "actors/group_member.hpp"
#include "actors/crash_log.hpp"

#include "actors/event_log.hpp"
#include "messages/atoms.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

namespace ef {

using namespace std::chrono_literals;

namespace {

/// Longest a poll blocks, so record_done messages are handled promptly.
constexpr int poll_timeout_ms = 20;
/// Offsets of a busy partition are committed at most this often.
constexpr auto commit_interval = 100ms;
/// How often lost positions are retried and the broker epoch is read.
constexpr auto housekeeping_interval = 1000ms;
/// How long an owned partition with records to read may go unfed before its
/// fetch counts as stalled. A fetcher feeds within fetch.wait.max.ms; this
/// is also how often an idle partition's log end is read (one request).
constexpr auto fetch_stall_after = 10s;

} // namespace

group_member_state::~group_member_state() {
  // Leaving the group triggers a revoke callback; there is nothing left to
  // stop by now (linked workers die with us), so callbacks must not act.
  closing = true;
  if (consumer)
    consumer->close();
}

void group_member_state::on_assigned(const std::vector<std::int32_t>& parts) {
  if (closing)
    return;
  ctx->metrics->add("consumer_rebalances_total", {{"consumer", consumer_name}});
  if (!parts.empty())
    watching_assignment = false;
  // Their pause state was set before the assignment (starts_paused): a
  // pause or resume now could race the fetch start librdkafka issues.
  for (auto p : parts) {
    spdlog::info("{}: assigned partition {}", consumer_name, p);
    start_worker(p);
  }
}

void group_member_state::start_worker(std::int32_t p) {
  auto& slot = owned[p];
  slot = owned_partition{};
  slot.worker = self->spawn<caf::detached + caf::linked>(
    partition_worker, ctx, consumer_name, p, caf::actor{self});
  slot.paused = drain_reply.has_value(); // a drain keeps everything paused
  slot.last_fed = std::chrono::steady_clock::now();
}

void group_member_state::restart_worker(std::int32_t p) {
  auto i = owned.find(p);
  if (i != owned.end()) {
    self->unlink_from(i->second.worker);
    self->send_exit(i->second.worker, caf::exit_reason::user_shutdown);
  }
  start_worker(p);
}

std::int64_t group_member_state::settle_lost(std::int32_t p,
                                             std::int64_t offset) {
  auto marks = consumer->query_watermarks(p);
  // The offsets this consumer will never read from this log. Records already
  // handed to the worker lie below `offset` and are applied as usual.
  auto from = std::max<std::int64_t>(offset, 0);
  auto to = std::max(from, marks.low);
  auto gap = repairs->record_gap(consumer_name, p, from, to, marks.high);
  auto& m = *ctx->metrics;
  if (offset > marks.high) {
    // The log ends before our position: this is not the log we read. The
    // repairer begins a new epoch (its witness is gone too); whatever the
    // worker holds belongs to the old log.
    m.add("consumer_positions_lost_total", {{"consumer", consumer_name}});
    spdlog::warn("{}: partition {}: position {} is past the log end {}: the "
                 "broker lost this log (replaced or truncated); rereading "
                 "from offset {}",
                 consumer_name, p, offset, marks.high, marks.low);
    restart_worker(p);
  } else if (to > from || gap.at_risk > 0) {
    m.add("consumer_positions_lost_total", {{"consumer", consumer_name}});
    m.add("repair_republished_total", {{"reason", "consumer_gap"}},
          static_cast<std::uint64_t>(gap.at_risk));
    spdlog::warn("{}: partition {}: {} is no longer on the broker (log now "
                 "{}..{}); offsets {}..{} cannot be read, {} event(s) there "
                 "not applied by {} are queued again (epoch {}); resuming at "
                 "{}",
                 consumer_name, p,
                 offset < 0 ? std::string("no committed offset")
                            : "offset " + std::to_string(offset),
                 marks.low, marks.high, from, to, gap.at_risk, consumer_name,
                 gap.epoch, marks.low);
  } else {
    spdlog::info("{}: partition {}: no committed offset; starting at the log "
                 "start ({})",
                 consumer_name, p, marks.low);
  }
  return marks.low;
}

void group_member_state::restart_fetching(
  const std::map<std::int32_t, std::int64_t>& at) {
  if (at.empty())
    return;
  // A replaced worker starts unpaused; the pauses go in with the new
  // assignment, never right after it.
  std::set<std::int32_t> paused;
  for (auto& [p, slot] : owned)
    if (slot.paused)
      paused.insert(p);
  consumer->restart_at(at, paused);
  auto now = std::chrono::steady_clock::now();
  for (auto& [p, slot] : owned)
    if (at.count(p) != 0)
      slot.last_fed = now;
}

void group_member_state::housekeeping() {
  auto now = std::chrono::steady_clock::now();
  if (now < next_check)
    return;
  next_check = now + housekeeping_interval;
  try {
    std::map<std::int32_t, std::int64_t> restart;
    auto current = repairs->current_epoch();
    if (epoch != 0 && current != epoch) {
      spdlog::warn("{}: broker epoch {} began; rereading {} owned "
                   "partition(s) from the log start",
                   consumer_name, current, owned.size());
      for (auto& [p, slot] : owned) {
        restart_worker(p);
        restart[p] = -1;
      }
    }
    for (auto& [p, offset] : lost)
      if (owned.count(p) != 0 && restart.count(p) == 0)
        restart[p] = settle_lost(p, offset); // revoked ones: the next owner's
    restart_stalled_fetches(now, restart);
    restart_fetching(restart);
    lost.clear();
    epoch = current;
    for (auto& [p, slot] : owned)
      if (ctx->faults->take_fetch_stall(consumer_name, p)) {
        spdlog::info("{}: partition {}: fetch stopped silently (injected)",
                     consumer_name, p);
        consumer->pause(p); // and slot.paused stays false
      }
    if (housekeeping_failing) {
      spdlog::info("{}: lost positions and the broker epoch are readable "
                   "again",
                   consumer_name);
      housekeeping_failing = false;
    }
  } catch (const std::exception& e) {
    // The partition stays stopped (nothing is skipped); try again later.
    // Once per outage at warn, then at debug: it is retried every second.
    spdlog::log(housekeeping_failing ? spdlog::level::debug
                                     : spdlog::level::warn,
                "{}: cannot settle lost positions or read the broker epoch "
                "yet: {}",
                consumer_name, e.what());
    housekeeping_failing = true;
  }
}

void group_member_state::restart_stalled_fetches(
  std::chrono::steady_clock::time_point now,
  std::map<std::int32_t, std::int64_t>& restart) {
  if (drain_reply)
    return; // a drain pauses everything on purpose
  for (auto& [p, slot] : owned) {
    if (restart.count(p) != 0 || lost.count(p) != 0 || slot.paused ||
        slot.in_flight > 0 || now - slot.last_fed < fetch_stall_after)
      continue;
    slot.last_fed = now; // an idle partition is looked at once per period
    // Nothing in flight: every record handed over is applied, so the next
    // one to read is where the applied ones end (or the committed offset).
    auto next = std::max(slot.done_up_to, slot.committed);
    kafka::group_consumer::watermarks marks;
    try {
      if (next < 0)
        next = consumer->committed(p);
      marks = consumer->query_watermarks(p);
    } catch (const std::exception& e) {
      // The broker cannot answer now (an outage says so elsewhere).
      spdlog::info("{}: partition {}: cannot check for a stalled fetch: {}",
                   consumer_name, p, e.what());
      continue;
    }
    if (marks.high <= std::max(next, marks.low))
      continue; // idle: nothing to read
    ctx->metrics->add("consumer_fetch_stalls_total",
                      {{"consumer", consumer_name}});
    // What librdkafka itself said about the partition, when its debug
    // contexts are on for this member (kafka.debug-contexts): the evidence
    // that names the cause of a stall (docs/notes/2026-12-04-fetch-stall.md).
    auto lines = consumer->recent_debug(p);
    if (lines.empty())
      spdlog::warn("{}: partition {}: no librdkafka debug lines kept (set "
                   "kafka.debug-contexts=fetch,consumer,cgrp,topic and "
                   "kafka.debug-consumers={} to capture the next stall)",
                   consumer_name, p, consumer_name);
    for (size_t i = lines.size() > 60 ? lines.size() - 60 : 0; i < lines.size();
         ++i)
      spdlog::warn("{}: partition {}: librdkafka: {}", consumer_name, p,
                   lines[i]);
    spdlog::warn(
      "{}: partition {}: fed nothing for {} s with offsets {}..{} "
      "on the broker and nothing in flight; restarting its fetch "
      "at {}",
      consumer_name, p,
      std::chrono::duration_cast<std::chrono::seconds>(fetch_stall_after)
        .count(),
      std::max(next, marks.low), marks.high,
      next < 0 ? "the log start (no committed offset)"
               : "offset " + std::to_string(next));
    restart[p] = next < 0 ? settle_lost(p, -1) : next;
  }
}

void group_member_state::on_revoked(const std::vector<std::int32_t>& parts) {
  if (closing)
    return;
  // Commit what is already applied, then stop the workers. A worker may
  // still finish its current transaction: its record is then redelivered to
  // the new owner and suppressed by the idempotency guard.
  commit_done(&parts);
  for (auto p : parts) {
    auto i = owned.find(p);
    if (i == owned.end())
      continue;
    spdlog::info("{}: revoked partition {}", consumer_name, p);
    self->unlink_from(i->second.worker);
    self->send_exit(i->second.worker, caf::exit_reason::user_shutdown);
    owned.erase(i);
  }
}

void group_member_state::poll_once() {
  housekeeping();
  auto rec = consumer->poll(poll_timeout_ms);
  if (rec) {
    auto i = owned.find(rec->partition);
    if (i != owned.end()) {
      auto& slot = i->second;
      ++slot.in_flight;
      slot.last_fed = std::chrono::steady_clock::now();
      if (!slot.paused && slot.in_flight >= ctx->cfg.consumer.max_in_flight) {
        consumer->pause(rec->partition);
        slot.paused = true;
      }
      self->send(slot.worker, std::move(*rec));
    }
  }
  auto now = std::chrono::steady_clock::now();
  if (!rec || now - last_commit >= commit_interval)
    commit_done();
  report_if_unassigned(now);
}

void group_member_state::report_if_unassigned(
  std::chrono::steady_clock::time_point now) {
  if (!watching_assignment)
    return;
  auto limit = 3 * std::chrono::milliseconds(ctx->cfg.kafka.session_timeout_ms);
  if (now - subscribed_at < limit)
    return;
  watching_assignment = false;
  spdlog::warn("{}: no partition assigned {} ms after subscribing to {}: "
               "expected if the group has more members than the topic has "
               "partitions, otherwise the group join is stuck",
               consumer_name, limit.count(), ctx->cfg.kafka.topic);
}

void group_member_state::on_done(const record_done& d) {
  auto i = owned.find(d.partition);
  // Ignore reports of a worker we already replaced or stopped.
  if (i == owned.end() || self->current_sender() != i->second.worker)
    return;
  auto& slot = i->second;
  --slot.in_flight;
  slot.done_up_to = std::max(slot.done_up_to, d.offset + 1);
  if (spdlog::should_log(spdlog::level::debug))
    slot.awaiting_commit.push_back(d);
  if (drain_reply) {
    finish_drain();
    return;
  }
  if (slot.paused && slot.in_flight <= ctx->cfg.consumer.max_in_flight / 2) {
    consumer->resume(d.partition);
    slot.paused = false;
  }
}

std::string
group_member_state::commit_done(const std::vector<std::int32_t>* only) {
  std::vector<std::pair<std::int32_t, std::int64_t>> offsets;
  for (auto& [p, slot] : owned) {
    if (only && std::find(only->begin(), only->end(), p) == only->end())
      continue;
    if (slot.done_up_to > slot.committed)
      offsets.emplace_back(p, slot.done_up_to);
  }
  last_commit = std::chrono::steady_clock::now();
  if (offsets.empty())
    return {};
  auto err = consumer->commit(offsets);
  if (!err.empty()) {
    // Not fatal: the records are applied, so a later commit (or the next
    // owner's redelivery, suppressed as duplicates) settles it.
    spdlog::warn("{}: offset commit failed: {}", consumer_name, err);
    return err;
  }
  for (auto& [p, off] : offsets) {
    auto& slot = owned[p];
    slot.committed = off;
    while (!slot.awaiting_commit.empty() &&
           slot.awaiting_commit.front().offset < off) {
      auto& d = slot.awaiting_commit.front();
      event_log::hop("offset_committed", d.order_id, d.event_id, d.traceparent,
                     {{"consumer", consumer_name},
                      {"partition", std::to_string(p)},
                      {"offset", std::to_string(d.offset)}});
      slot.awaiting_commit.pop_front();
    }
  }
  return {};
}

caf::typed_response_promise<drain_report> group_member_state::drain() {
  for (auto& [p, slot] : owned) {
    consumer->pause(p);
    slot.paused = true;
  }
  drain_reply = self->make_response_promise<drain_report>();
  auto rp = *drain_reply;
  finish_drain();
  return rp;
}

void group_member_state::finish_drain() {
  for (auto& [p, slot] : owned)
    if (slot.in_flight > 0)
      return;
  if (auto err = commit_done(); !err.empty()) {
    drain_reply->deliver(
      drain_report{false,
                   {"every fetched record is applied, but the offset "
                    "commit failed: " +
                    err}});
  } else {
    spdlog::info("{}: drained: every fetched record is applied and committed",
                 consumer_name);
    drain_reply->deliver(drain_report{true, {}});
  }
  drain_reply.reset();
}

bool group_member_state::on_worker_exit(const caf::exit_msg& em) {
  for (auto& [p, slot] : owned) {
    if (slot.worker.address() != em.source)
      continue;
    auto reason = reason_class(em.reason);
    ctx->metrics->add("actor_restarts_total",
                      {{"kind", "partition"}, {"reason", reason}});
    spdlog::warn("{}: partition {} actor crashed ({}); restarting from the "
                 "committed offset",
                 consumer_name, p, self->system().render(em.reason));
    if (!is_outage(em.reason) && !restarts->allow())
      throw std::runtime_error(consumer_name +
                               ": partition actors exceed the restart "
                               "intensity; escalating");
    // Records handed to the dead actor are gone with its mailbox; rewind to
    // the committed offset and let the broker redeliver them.
    auto committed = consumer->committed(p);
    start_worker(p);
    journal_restart(
      *ctx, consumer_name + " p" + std::to_string(p), em.reason,
      consumer_name + " group member restarted the partition " +
        std::to_string(p) + " actor after " + self->system().render(em.reason) +
        "; it reads again from offset " + std::to_string(committed));
    owned[p].committed = committed;
    consumer->seek(p, committed);
    if (drain_reply) {
      consumer->pause(p);
      finish_drain();
    } else {
      consumer->resume(p);
    }
    return true;
  }
  return false;
}

void group_member_state::stop(caf::error reason) {
  stopping = std::move(reason);
  // A worker that receives an exit message unlinks from its sender first,
  // so its end reaches us as a down message, not as a linked exit.
  for (auto& [p, slot] : owned) {
    self->monitor(slot.worker);
    self->send_exit(slot.worker, *stopping);
  }
  on_stopped_worker({});
}

void group_member_state::on_stopped_worker(const caf::actor_addr& source) {
  for (auto i = owned.begin(); i != owned.end(); ++i)
    if (i->second.worker.address() == source) {
      owned.erase(i);
      break;
    }
  if (owned.empty())
    self->quit(*stopping);
}

caf::behavior group_member(caf::stateful_actor<group_member_state>* self,
                           context_ptr ctx, std::string consumer_name) {
  log_crashes(self, consumer_name + " group member");
  auto& st = self->state;
  st.self = self;
  st.ctx = ctx;
  st.consumer_name = consumer_name;
  auto& cfg = ctx->cfg;
  st.restarts.emplace(cfg.supervisor.max_restarts,
                      std::chrono::seconds(cfg.supervisor.restart_window_s));
  kafka::group_consumer::callbacks cbs;
  auto* state = &st;
  cbs.assigned = [state](const auto& ps) { state->on_assigned(ps); };
  cbs.revoked = [state](const auto& ps) { state->on_revoked(ps); };
  cbs.starts_paused = [state](std::int32_t) {
    return state->drain_reply.has_value(); // a drain keeps everything paused
  };
  cbs.position_lost = [state](std::int32_t p, std::int64_t offset) {
    state->lost[p] = offset;
    // Settle it soon, together with the other partitions a join or an
    // outage reports in the same moment (one restart for all of them).
    state->next_check =
      std::min(state->next_check, std::chrono::steady_clock::now() + 100ms);
  };
  st.repairs = std::make_unique<persistence::repair_store>(ctx->dsn);
  auto& debug_for = cfg.kafka.debug_consumers;
  bool debug =
    !cfg.kafka.debug_contexts.empty() &&
    (debug_for.empty() || std::find(debug_for.begin(), debug_for.end(),
                                    consumer_name) != debug_for.end());
  std::string contexts;
  for (auto& c : cfg.kafka.debug_contexts)
    contexts += (contexts.empty() ? "" : ",") + c;
  st.consumer = std::make_unique<kafka::group_consumer>(
    ctx->brokers, "eventforge." + consumer_name, cfg.kafka.topic,
    cfg.kafka.session_timeout_ms, cfg.kafka.fetch_wait_max_ms, std::move(cbs),
    debug ? contexts : std::string{});
  st.subscribed_at = std::chrono::steady_clock::now();
  self->set_exit_handler([self](caf::exit_msg& em) {
    auto& st = self->state;
    if (st.stopping)
      st.on_stopped_worker(em.source);
    else if (!st.on_worker_exit(em))
      st.stop(em.reason); // from our supervisor: shut down
  });
  self->set_down_handler([self](caf::down_msg& dm) {
    if (self->state.stopping)
      self->state.on_stopped_worker(dm.source);
  });
  self->send(self, poll_atom::value);
  return {
    [=](poll_atom) {
      if (self->state.stopping)
        return; // a rebalance now would start partition actors again
      self->state.poll_once();
      self->send(self, poll_atom::value);
    },
    [=](record_done& d) { self->state.on_done(d); },
    [=](drain_atom) -> caf::result<drain_report> {
      return self->state.drain();
    },
    [=](children_atom) {
      std::map<std::string, caf::actor> live;
      for (auto& [p, slot] : self->state.owned)
        live.emplace("partition-" + std::to_string(p), slot.worker);
      return live;
    },
  };
}

} // namespace ef
