#include "actors/api_worker.hpp"
#include "actors/crash_log.hpp"
#include "actors/order_validation.hpp"
#include "actors/thread_name.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/events.hpp>

#include "actors/event_log.hpp"
#include "messages/ids.hpp"
#include "persistence/db_error.hpp"
#include <eventforge/messages/api_error.hpp>

#include <algorithm>
#include <chrono>

namespace ef {

namespace {

using unix_ms = std::int64_t;

using deadline = std::optional<std::chrono::system_clock::time_point>;

deadline as_deadline(unix_ms d) {
  if (d == 0)
    return std::nullopt;
  return std::chrono::system_clock::time_point{std::chrono::milliseconds(d)};
}

/// The earliest deadline of `batch`, if any command has one.
deadline
earliest_deadline(const std::vector<api_worker_state::pending_write>& batch) {
  unix_ms earliest = 0;
  for (auto& p : batch)
    if (auto d = p.deadline(); d > 0 && (earliest == 0 || d < earliest))
      earliest = d;
  return as_deadline(earliest);
}

/// The reply of a command that waits for its transaction: if the worker
/// stops first, nothing of it was written, and the requester hears so.
kept_promise waiting_reply(api_worker_actor::pointer self) {
  return {self->make_response_promise(),
          make_api_error(api_errc::unavailable,
                         "the API worker stopped before writing it; nothing "
                         "was written")};
}

} // namespace

void api_worker_state::enqueue(pending_write w) {
  pending.push_back(std::move(w));
  if (pending.size() >= static_cast<size_t>(ctx->cfg.api.batch_max)) {
    flush();
    return;
  }
  if (flush_scheduled)
    return;
  flush_scheduled = true;
  // With no wait, the flush message queues behind whatever arrived while the
  // previous transaction ran: the batch is exactly the backlog, and a lone
  // command pays no delay.
  auto wait = std::chrono::microseconds(ctx->cfg.api.batch_wait_us);
  if (wait.count() == 0)
    self->send(self, flush_atom::value);
  else
    self->delayed_send(self, wait, flush_atom::value);
}

namespace {

api_worker_state::outcome run(persistence::order_writer& w,
                              const api_worker_state::pending_write& p) {
  if (auto* c = std::get_if<create_order>(&p.cmd))
    return w.create(*c, p.order_id, p.event_id);
  auto& c = std::get<cancel_order>(p.cmd);
  return w.cancel(c.order_id, c.traceparent);
}

} // namespace

size_t api_worker_state::refuse_late(std::vector<pending_write>& batch) {
  auto now = deps.now_unix_ms();
  auto late = std::stable_partition(batch.begin(), batch.end(),
                                    [now](const pending_write& p) {
                                      auto d = p.deadline();
                                      return d == 0 || d > now;
                                    });
  size_t refused = 0;
  for (auto i = late; i != batch.end(); ++i, ++refused)
    i->reply.deliver(make_api_error(
      api_errc::unavailable,
      "its deadline passed before an API worker could write it (the "
      "service is busy); nothing was written"));
  batch.erase(late, batch.end());
  if (refused > 0) {
    ctx->metrics->add("api_commands_expired_total", {},
                      static_cast<std::uint64_t>(refused));
    ef::log::info("api: {} command(s) refused: their deadline passed before "
                  "they could be written",
                  refused);
  }
  return refused;
}

void api_worker_state::flush() {
  flush_scheduled = false;
  if (pending.empty())
    return;
  auto batch = std::move(pending);
  pending.clear();
  // A command whose sender stopped waiting is never written: its answer,
  // "nothing was written", must stay true.
  refuse_late(batch);
  if (batch.empty())
    return;
  ctx->metrics->observe("api_batch_size", {},
                        static_cast<double>(batch.size()));
  // From here a command may be committed: if this worker stops before its
  // answer (a crash, a kill by its supervisor), the requester learns that
  // the outcome is unknown, never nothing at all.
  for (auto& p : batch)
    p.reply.if_dropped(make_api_error(api_errc::outcome_unknown,
                                      "the API worker stopped during or after "
                                      "the commit; the outcome is unknown"));
  std::vector<outcome> results(batch.size());
  try {
    store->write(
      [&](persistence::order_writer& w) {
        for (size_t i = 0; i < batch.size(); ++i)
          results[i] = run(w, batch[i]);
      },
      earliest_deadline(batch));
  } catch (const persistence::db_error& e) {
    using persistence::db_errc;
    bool isolatable =
      e.code() == db_errc::transient || e.code() == db_errc::permanent;
    if (batch.size() == 1) {
      batch[0].reply.deliver(failure_of(batch[0], e));
      return;
    }
    if (!isolatable) {
      // Nothing was written (or, in doubt, the same for every command):
      // one cause, logged once, one answer for all.
      auto err = to_api_error(e, "write batch");
      for (auto& p : batch)
        p.reply.deliver(err);
      return;
    }
    // One command (or a deadlock with another batch, or the earliest
    // deadline) failed the shared transaction: run each alone, so only the
    // culprit gets the error and each keeps its own deadline.
    ef::log::info("api: batch of {} failed ({}); retrying one at a time",
                  batch.size(), e.what());
    for (auto& p : batch) {
      outcome o;
      try {
        store->write([&](persistence::order_writer& w) { o = run(w, p); },
                     as_deadline(p.deadline()));
      } catch (const persistence::db_error& one) {
        p.reply.deliver(failure_of(p, one));
        continue;
      }
      answer(p, o);
    }
    return;
  }
  // A crash between commit and reply (chaos) leaves this command and the
  // ones after it committed but unanswered by name: their promises answer
  // "outcome unknown" as the batch goes, exactly what a client sees when a
  // server dies after its commit.
  for (size_t i = 0; i < batch.size(); ++i)
    answer(batch[i], results[i]);
}

caf::result<order_view> api_worker_state::view(const get_order& cmd) {
  if (!is_uuid(cmd.order_id))
    return make_api_error(api_errc::not_found, "no such order", "order_id");
  try {
    auto v = store->view(cmd.order_id);
    if (!v)
      return make_api_error(api_errc::not_found, "no such order", "order_id");
    return std::move(*v);
  } catch (const persistence::db_error& e) {
    return to_api_error(e, "read order");
  }
}

api_worker_deps production_api_worker_deps(const context_ptr& ctx) {
  api_worker_deps deps;
  deps.store = [dsn = ctx->dsn, shards = ctx->cfg.relay.shards] {
    return std::make_unique<persistence::order_store>(dsn, shards);
  };
  deps.now_unix_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
  };
  return deps;
}

api_worker_actor::behavior_type
api_worker(api_worker_actor::stateful_pointer<api_worker_state> self,
           context_ptr ctx) {
  auto deps = production_api_worker_deps(ctx);
  return api_worker_with(self, std::move(ctx), std::move(deps));
}

api_worker_actor::behavior_type
api_worker_with(api_worker_actor::stateful_pointer<api_worker_state> self,
                context_ptr ctx, api_worker_deps deps) {
  // The store connects lazily, so a worker starts even while the database is
  // down and answers 503 until it is back.
  log_crashes(self, "api");
  name_blocking_thread(self, "api");
  self->state.self = self;
  self->state.store = deps.store();
  self->state.deps = std::move(deps);
  self->state.ctx = std::move(ctx);
  return {
    [=](create_order& cmd) -> caf::result<order_accepted> {
      if (auto bad = validate(cmd))
        return make_api_error(api_errc::invalid, bad->message, bad->field);
      // A typed caller's keyed command gets the check HTTP requests get: a
      // reused key with another body is a conflict, not a replay.
      if (!cmd.idempotency_key.empty() && cmd.request_fingerprint.empty())
        cmd.request_fingerprint = request_fingerprint(cmd);
      api_worker_state::pending_write w{std::move(cmd), new_uuid_v7(),
                                        new_uuid_v7(), waiting_reply(self)};
      auto& c = std::get<create_order>(w.cmd);
      event_log::hop("accepted", w.order_id, w.event_id, c.traceparent,
                     {{"customer_id", c.customer_id}});
      self->state.enqueue(std::move(w));
      return caf::delegated<order_accepted>();
    },
    [=](cancel_order& cmd) -> caf::result<cancel_accepted> {
      if (!is_uuid(cmd.order_id))
        return make_api_error(api_errc::not_found, "no such order", "order_id");
      if (auto bad = validate_traceparent(cmd.traceparent))
        return make_api_error(api_errc::invalid, bad->message, bad->field);
      self->state.enqueue({std::move(cmd), {}, {}, waiting_reply(self)});
      return caf::delegated<cancel_accepted>();
    },
    [=](get_order& cmd) { return self->state.view(cmd); },
    [=](flush_atom) { self->state.flush(); },
    // Commits what is gathered; nothing is held after that.
    [=](drain_atom) {
      self->state.flush();
      return drain_report{true, {}};
    },
  };
}

} // namespace ef
