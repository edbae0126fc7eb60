#include "actors/repairer.hpp"

#include "actors/crash_log.hpp"
#include "actors/round_loop.hpp"
#include "actors/thread_name.hpp"
#include <eventforge/config/logging.hpp>

namespace ef {

using namespace std::chrono_literals;

namespace {

/// A consumer gap is swept again for this long: a row acknowledged before a
/// trim can be marked after the gap was recorded.
constexpr int gap_resweep_window_s = 60;
/// Rows per transaction when queuing an old epoch's rows again.
constexpr int sweep_batch = 5000;
/// Every this many rounds, each partition's witness moves on to its newest
/// record and the epoch gauge and the old-epoch sweep are read again;
/// every `gap_every` rounds the recent gaps are swept. The broker's side of
/// the witness check runs every round: a lost log is still found within a
/// round of the records it held.
constexpr long advance_every = 10;
constexpr long gap_every = 5;

} // namespace

std::optional<std::string>
repairer_state::check(const persistence::broker_witness& w) {
  auto p = std::to_string(w.partition);
  auto marks = probe->query_watermarks(w.partition);
  if (w.offset >= marks.high)
    return "partition " + p + " ends at offset " + std::to_string(marks.high) +
           ", but the outbox recorded event " + w.event_id + " at offset " +
           std::to_string(w.offset);
  if (w.offset < marks.low)
    return std::nullopt; // trimmed: nothing left to compare
  auto found = probe->event_id_at(w.partition, w.offset);
  if (found && *found != w.event_id)
    return "partition " + p + " offset " + std::to_string(w.offset) +
           " holds event " + (found->empty() ? "<none>" : *found) +
           ", but the outbox recorded event " + w.event_id + " there";
  return std::nullopt;
}

std::optional<std::string> repairer_state::lost_log(bool advance) {
  for (int p = 0; p < ctx->cfg.kafka.partitions; ++p) {
    auto known = witnesses.find(p);
    if (known == witnesses.end() && advance) {
      if (auto w = store->witness_of(p))
        known = witnesses.emplace(p, *w).first;
    }
    if (known == witnesses.end())
      continue; // nothing published there yet (as of the last advance)
    // Verify the record verified last time, then move on to the newest: a
    // log replaced between two rounds cannot hold the old witness.
    if (auto why = check(known->second))
      return why;
    if (!advance)
      continue;
    auto newest = store->newest_position(p);
    if (!newest || newest->offset == known->second.offset)
      continue;
    if (auto why = check(*newest))
      return why;
    store->save_witness(*newest);
    known->second = *newest;
  }
  return std::nullopt;
}

std::chrono::milliseconds repairer_state::round() {
  auto interval = std::chrono::milliseconds(ctx->cfg.repair.interval_ms);
  if (!store)
    store = deps.store();
  if (!probe)
    probe = deps.probe();
  bool was_active = active;
  active = store->hold_repairer_lease();
  if (active != was_active) {
    ef::log::info("repairer: {}", active ? "active for this database"
                                         : "standing by (another is active)");
    rounds = 0;
    witnesses.clear();
    sweep_due = true;
  }
  if (!active)
    return interval;
  // The database's side of the checks: on the first active round, then on
  // every advance_every-th.
  bool advance = ++rounds % advance_every == 1;
  auto& m = *ctx->metrics;
  std::optional<std::string> lost;
  try {
    lost = lost_log(advance);
  } catch (const std::runtime_error& e) {
    // The broker could not say this round (a leader moving, a broker
    // down): no verdict either way, so nothing is declared lost; the next
    // round asks again with a fresh client. The database sweeps below go on.
    ef::log::info("repairer: cannot read the broker this round ({}); the "
                  "epoch check waits for the next round",
                  e.what());
    probe.reset();
  }
  if (auto why = lost) {
    auto epoch = store->begin_epoch(*why);
    witnesses.clear();
    sweep_due = true;
    rounds = 0; // the next round finds the new epoch's witnesses
    m.set("broker_epoch", {}, epoch);
    m.add("broker_epochs_total", {});
    ef::log::warn("repairer: the broker lost records the outbox published "
                  "({}); broker epoch {} begins, everything a consumer has "
                  "not applied is published again",
                  *why, epoch);
  }
  if (advance)
    sweep_due = true; // the safety net: a sweep is otherwise due only after
                      // an activation, an epoch begun here, or a full batch
  auto swept =
    sweep_due ? store->sweep_old_epochs(ctx->cfg.consumer.enabled, sweep_batch)
              : 0;
  sweep_due = swept > 0; // a sweep that found rows looks again next round
  if (auto n = swept) {
    m.add("repair_republished_total", {{"reason", "broker_epoch"}},
          static_cast<std::uint64_t>(n));
    ef::log::warn("repairer: {} event(s) published under an earlier broker "
                  "epoch and not applied by every consumer are queued again",
                  n);
  }
  auto gaps = rounds % gap_every == 1
                ? store->resweep_recent_gaps(gap_resweep_window_s)
                : 0;
  if (auto n = gaps) {
    m.add("repair_republished_total", {{"reason", "consumer_gap"}},
          static_cast<std::uint64_t>(n));
    ef::log::warn("repairer: {} event(s) marked sent after their consumer gap "
                  "was recorded are queued again",
                  n);
  }
  if (advance)
    m.set("broker_epoch", {}, store->current_epoch());
  return interval;
}

repairer_deps production_repairer_deps(const context_ptr& ctx) {
  repairer_deps deps;
  // Read from the context when called, as the actor did itself.
  deps.store = [ctx] {
    return std::make_unique<persistence::repair_store>(ctx->dsn);
  };
  deps.probe = [ctx] {
    return std::make_unique<kafka::broker_probe>(ctx->cluster,
                                                 ctx->cfg.kafka.topic);
  };
  return deps;
}

caf::behavior repairer(caf::stateful_actor<repairer_state>* self,
                       context_ptr ctx) {
  auto deps = production_repairer_deps(ctx);
  return repairer_with(self, std::move(ctx), std::move(deps));
}

caf::behavior repairer_with(caf::stateful_actor<repairer_state>* self,
                            context_ptr ctx, repairer_deps deps) {
  log_crashes(self, "repairer");
  name_blocking_thread(self, "repairer");
  self->state.ctx = std::move(ctx);
  self->state.deps = std::move(deps);
  return round_loop(self);
}

} // namespace ef
