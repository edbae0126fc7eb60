#include "actors/group_member.hpp"

#include "actors/crash_log.hpp"
#include "actors/thread_name.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/atoms.hpp>

#include <algorithm>

namespace ef {

using namespace std::chrono_literals;

namespace {

/// Longest a poll blocks while records are in flight or offsets wait for
/// their commit, so record_done messages and commits are handled promptly
/// (the member handles its messages between polls).
constexpr int busy_poll_timeout_ms = 20;
/// Longest a poll blocks otherwise. A record or a relay's announcement ends
/// a poll at once; what waits for it is a drain, an exit or a restart of a
/// partition actor, for which a quarter of a second is nothing, while an
/// idle member that woke every 20 ms cost 50 wake-ups a second.
constexpr int idle_poll_timeout_ms = 250;
/// Offsets of a busy partition are committed at most this often.
constexpr auto commit_interval = 100ms;
/// How often lost positions are retried and the broker epoch is read.
constexpr auto housekeeping_interval = 1000ms;
/// How long an owned partition with records to read may go unfed before its
/// fetch counts as stalled (also how often an idle one's log end is read).
constexpr auto fetch_stall_after = 10s;

} // namespace

group_member_state::~group_member_state() {
  // Leaving the group triggers a revoke callback; there is nothing left to
  // stop by now (linked workers die with us), so callbacks must not act.
  closing = true;
  if (heard)
    heard->close(); // no wake-up may reach the client once it is gone
  if (consumer)
    consumer->close();
}

void group_member_state::on_assigned(const std::vector<std::int32_t>& parts) {
  if (closing)
    return;
  ctx->metrics->add("consumer_rebalances_total", {{"consumer", consumer_name}});
  assignments->assigned(!parts.empty());
  // Their pause state was set before the assignment (starts_paused): a
  // pause or resume now could race the fetch start librdkafka issues.
  // One line per assignment at info; the per-partition detail (where each
  // starts) is at debug.
  std::string list;
  for (auto p : parts) {
    list += (list.empty() ? "" : ", ") + std::to_string(p);
    begin_partition(p, false);
  }
  if (!parts.empty())
    ef::log::info("{}: assigned partition(s) {}", consumer_name, list);
}

void group_member_state::begin_partition(std::int32_t p, bool replace) {
  if (replace)
    workers->replace(p);
  else
    workers->start(p);
  flow->start(p, false, now());
  commits->forget(p);
}

void group_member_state::on_revoked(const std::vector<std::int32_t>& parts) {
  if (closing)
    return;
  // Commit what is already applied, then stop the workers. A worker may
  // still finish its current transaction: its record is then redelivered to
  // the new owner and suppressed by the idempotency guard.
  commit_done(&parts);
  for (auto p : parts) {
    if (!flow->owns(p))
      continue;
    ef::log::info("{}: revoked partition {}", consumer_name, p);
    workers->remove(p);
    flow->stop(p);
    commits->forget(p);
  }
}

void group_member_state::housekeeping() {
  auto at = now();
  if (at < next_check)
    return;
  next_check = at + housekeeping_interval;
  settle_soon = false;
  // A new epoch is announced on the listener's session; without a healthy
  // one, the epoch is read every round, as nothing would announce it.
  if (heard->take_epoch_news() || !listener || !listener->healthy())
    repairs->epoch_news();
  repairs->run(*flow, *consumer, *ctx->metrics, at,
               [this](std::int32_t p) { begin_partition(p, true); });
  repairs->watchdog().inject_stalls(*flow, *consumer, *ctx->faults);
  keep_listening();
  if (!pausing && report_to_control(false))
    begin_pause();
}

int group_member_state::poll_timeout_ms(caf::actor_clock::time_point at) const {
  int ms = flow->busy() ? busy_poll_timeout_ms : idle_poll_timeout_ms;
  // A lost position settles at the housekeeping it pulled forward, not one
  // idle poll later: a new group's first record (no committed offset yet)
  // waited up to 350 ms for it.
  if (settle_soon) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(next_check - at);
    ms = std::clamp(static_cast<int>(left.count()), 0, ms);
  }
  return ms;
}

void group_member_state::poll_once() {
  housekeeping();
  auto rec = consumer->poll(poll_timeout_ms(now()));
  if (rec) {
    // A partition whose actor waits for its restart drops what it fetched:
    // the restart rewinds it to the committed offset.
    if (auto w = workers->actor_of(rec->partition)) {
      if (flow->fed(rec->partition, now()))
        consumer->pause(rec->partition);
      self->send(w, std::move(*rec));
    }
  }
  auto at = now();
  settle_parking(at);
  if (!rec || at - last_commit >= commit_interval)
    commit_done();
  assignments->check(at);
}

void group_member_state::on_done(const record_done& d) {
  // Ignore reports of a worker we already replaced or stopped.
  auto w = workers->actor_of(d.partition);
  if (!w || self->current_sender() != w)
    return;
  commits->done(d);
  if (flow->done(d.partition, d.offset))
    consumer->resume(d.partition);
  if (drain_reply || pausing)
    finish_drain();
}

caf::error
group_member_state::commit_done(const std::vector<std::int32_t>* only) {
  last_commit = now();
  auto err = commits->commit(*flow, *consumer, only);
  // Not fatal (the records are applied; a later commit or a redelivery
  // settles it), but an operator sees a coordinator that keeps refusing.
  if (err)
    ctx->metrics->add("consumer_offset_commit_failures_total",
                      {{"consumer", consumer_name}});
  return err;
}

bool group_member_state::on_worker_exit(const caf::exit_msg& em) {
  auto crash = workers->crashed(em);
  if (!crash)
    return false;
  auto [p, delay] = *crash;
  // What the dead actor held is gone with its mailbox: the partition waits,
  // paused, then rereads from the committed offset.
  consumer->pause(p);
  flow->start(p, true, now());
  commits->forget(p);
  self->delayed_send(self, delay, restart_atom::value,
                     static_cast<std::uint64_t>(p));
  return true;
}

void group_member_state::restart_worker(std::int32_t p) {
  if (stopping || !workers->waiting(p))
    return; // revoked or stopped meanwhile
  auto committed = consumer->committed(p);
  workers->start(p);
  flow->start(p, flow->draining(), now());
  flow->committed({{p, committed}});
  consumer->seek(p, committed);
  if (flow->draining())
    finish_drain(); // the partition stays paused with the others
  else
    consumer->resume(p);
}

void group_member_state::stop(caf::error reason) {
  stopping = std::move(reason);
  leave_members();
  workers->stop_all(*stopping);
  if (workers->ended({}))
    self->quit(*stopping);
}

/// The client's callbacks into the member (rebalances, lost positions,
/// partitions read to their end), run on the member's thread during a poll.
kafka::group_client::callbacks member_callbacks(group_member_state* state) {
  kafka::group_client::callbacks cbs;
  cbs.assigned = [state](const auto& ps) { state->on_assigned(ps); };
  cbs.revoked = [state](const auto& ps) { state->on_revoked(ps); };
  cbs.starts_paused = [state](std::int32_t) {
    return state->flow->draining(); // a drain keeps everything paused
  };
  cbs.position_lost = [state](std::int32_t p, std::int64_t offset) {
    state->repairs->lost(p, offset);
    // Settle it soon, together with the other partitions a join or an
    // outage reports in the same moment (one restart for all of them).
    state->next_check = std::min(state->next_check, state->now() + 100ms);
    state->settle_soon = true;
  };
  cbs.at_end = [state](std::int32_t p, std::int64_t next) {
    state->flow->at_end(p, next, state->now());
  };
  return cbs;
}

caf::behavior group_member_with(caf::stateful_actor<group_member_state>* self,
                                context_ptr ctx, std::string consumer_name,
                                group_member_deps deps) {
  log_crashes(self, consumer_name + " group member");
  name_blocking_thread(self, consumer_name.substr(0, 8) + "-grp");
  auto& st = self->state;
  st.self = self;
  st.ctx = ctx;
  st.consumer_name = consumer_name;
  st.control = std::move(deps.control);
  st.member_id = member_control::new_member_id(ctx->cfg.node.name);
  // Reported consuming until it knows: a reset then waits, never races.
  if (st.report_to_control(false))
    return paused_member(self); // waits, outside the group, until resumed
  st.flow.emplace(ctx->cfg.consumer.max_in_flight);
  st.repairs.emplace(consumer_name, deps.ledger(), fetch_stall_after);
  st.workers.emplace(self, ctx, consumer_name, deps.worker);
  st.commits.emplace(consumer_name);
  st.consumer = deps.client(member_callbacks(&st));
  st.heard = std::make_shared<announcements>(
    [client = st.consumer.get()] { client->wake(); });
  st.deps = std::move(deps);
  st.assignments.emplace(
    consumer_name, ctx->cfg.kafka.topic,
    std::chrono::milliseconds(ctx->cfg.kafka.session_timeout_ms), st.now());
  self->set_exit_handler([self](caf::exit_msg& em) {
    auto& st = self->state;
    if (st.stopping) {
      if (st.workers->ended(em.source))
        self->quit(*st.stopping);
    } else if (!st.on_worker_exit(em)) {
      st.stop(em.reason); // from our supervisor: shut down
    }
  });
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.stopping && st.workers->ended(dm.source))
      self->quit(*st.stopping);
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
    [=](restart_atom, std::uint64_t p) {
      self->state.restart_worker(static_cast<std::int32_t>(p));
    },
    [=](drain_atom) -> caf::result<drain_report> {
      return self->state.drain();
    },
    [=](children_atom) { return self->state.workers->live(); },
  };
}

} // namespace ef
