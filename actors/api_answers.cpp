// The API worker's answers: what a requester hears for each outcome of its
// command, and for each database failure (actors/api_worker.hpp).

#include "actors/api_worker.hpp"
#include "actors/event_log.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/events.hpp>

namespace ef {

/// Maps a database failure to the API's error, logging the cause once.
/// Every answer but in_doubt's is a fact: nothing was written.
caf::error to_api_error(const persistence::db_error& e, const char* what) {
  using persistence::db_errc;
  ef::log::warn("api: {} failed ({}): {}", what, to_string(e.code()), e.what());
  switch (e.code()) {
  case db_errc::in_doubt:
    return make_api_error(api_errc::outcome_unknown,
                          "database connection lost during commit; the "
                          "outcome is unknown");
  case db_errc::unavailable:
    return make_api_error(api_errc::unavailable,
                          "database unavailable; nothing was written");
  case db_errc::transient:
    return make_api_error(api_errc::unavailable,
                          "the database could not commit it in time (a "
                          "lock, a timeout or a conflict); nothing was "
                          "written");
  case db_errc::permanent:
  case db_errc::none: // not thrown: a db_error is a failure
    break;
  }
  return make_api_error(api_errc::internal, "database rejected the write");
}

namespace {

const char* what_of(const api_worker_state::pending_write& p) {
  return std::holds_alternative<create_order>(p.cmd) ? "create order"
                                                     : "cancel order";
}

} // namespace

caf::error api_worker_state::failure_of(const pending_write& p,
                                        const persistence::db_error& e) {
  auto d = p.deadline();
  if (e.code() == persistence::db_errc::transient && d > 0 &&
      d <= deps.now_unix_ms()) {
    // Cancelled by its statement_timeout, or rolled back before COMMIT
    // (order_store::write): its deadline is why it was not written.
    ctx->metrics->add("api_commands_expired_total", {});
    ef::log::info("api: {} not written: its deadline passed ({})", what_of(p),
                  e.what());
    return make_api_error(api_errc::unavailable,
                          "its deadline passed before it could be "
                          "committed (the database was busy or locked); "
                          "nothing was written");
  }
  return to_api_error(e, what_of(p));
}

void api_worker_state::answer(pending_write& p, const outcome& o) {
  if (auto* c = std::get_if<cancel_order>(&p.cmd)) {
    auto& r = std::get<persistence::cancel_result>(o);
    switch (r.outcome) {
    case persistence::cancel_result::not_found:
      p.reply.deliver(
        make_api_error(api_errc::not_found, "no such order", "order_id"));
      return;
    case persistence::cancel_result::already_cancelled:
      p.reply.deliver(make_api_error(api_errc::conflict,
                                     "order already cancelled", "order_id"));
      return;
    case persistence::cancel_result::cancelled:
      break;
    }
    event_log::hop("committed", c->order_id, r.event_id, c->traceparent,
                   {{"event_type", "OrderCancelled"}});
    p.reply.deliver(cancel_accepted{c->order_id, r.event_id});
    return;
  }
  auto& cmd = std::get<create_order>(p.cmd);
  auto& r = std::get<persistence::create_result>(o);
  if (r.outcome == persistence::create_result::key_conflict) {
    p.reply.deliver(make_api_error(api_errc::conflict,
                                   "Idempotency-Key was already used with a "
                                   "different request body",
                                   "Idempotency-Key"));
    return;
  }
  bool replayed = r.outcome == persistence::create_result::replayed;
  event_log::hop(replayed ? "replayed" : "committed", r.order_id, r.event_id,
                 cmd.traceparent);
  // The window where the client never sees the reply: its keyed retry must
  // get the same order back.
  if (!replayed)
    ctx->faults->check(
      crash_point::api_after_commit_before_reply,
      chaos_key(cmd.traceparent, order_created_type, r.event_id),
      {r.order_id, r.event_id, ""});
  ctx->metrics->add("api_orders_total",
                    {{"outcome", replayed ? "replayed" : "created"}});
  p.reply.deliver(order_accepted{r.order_id, r.event_id, r.status, replayed});
}

} // namespace ef
