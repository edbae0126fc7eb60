#include "actors/api_worker.hpp"
#include "actors/crash_log.hpp"
#include "actors/order_validation.hpp"
#include "messages/atoms.hpp"
#include "messages/events.hpp"

#include "actors/event_log.hpp"
#include "messages/api_error.hpp"
#include "messages/ids.hpp"
#include "persistence/db_error.hpp"

#include <spdlog/spdlog.h>

namespace ef {

namespace {

/// Maps a database failure to the API's error, logging the cause once.
caf::error to_api_error(const persistence::db_error& e, const char* what) {
  using persistence::db_errc;
  spdlog::warn("api: {} failed ({}): {}", what, to_string(e.code()), e.what());
  switch (e.code()) {
  case db_errc::in_doubt:
    return make_api_error(api_errc::unavailable,
                          "database connection lost during commit; the "
                          "outcome is unknown, retry with the same "
                          "Idempotency-Key");
  case db_errc::unavailable:
  case db_errc::transient:
    return make_api_error(api_errc::unavailable,
                          "database unavailable, nothing was written");
  case db_errc::permanent:
    break;
  }
  return make_api_error(api_errc::internal, "database rejected the write");
}

} // namespace

caf::result<order_accepted> api_worker_state::create(const create_order& cmd) {
  if (auto bad = validate(cmd))
    return make_api_error(api_errc::invalid, bad->message, bad->field);
  try {
    auto order_id = new_uuid_v7();
    auto event_id = new_uuid_v7();
    event_log::hop("accepted", order_id, event_id, cmd.traceparent,
                   {{"customer_id", cmd.customer_id}});
    auto r = store->create(cmd, order_id, event_id);
    if (r.outcome == persistence::create_result::key_conflict)
      return make_api_error(api_errc::conflict,
                            "Idempotency-Key was already used with a "
                            "different request body",
                            "Idempotency-Key");
    bool replayed = r.outcome == persistence::create_result::replayed;
    event_log::hop(replayed ? "replayed" : "committed", r.order_id, r.event_id,
                   cmd.traceparent);
    // The window where the client never sees the reply: its keyed retry
    // must get the same order back.
    if (!replayed)
      ctx->faults->check(
        crash_point::api_after_commit_before_reply,
        chaos_key(cmd.traceparent, order_created_type, r.event_id));
    ctx->metrics->add("api_orders_total",
                      {{"outcome", replayed ? "replayed" : "created"}});
    return order_accepted{r.order_id, r.event_id, r.status, replayed};
  } catch (const persistence::db_error& e) {
    return to_api_error(e, "create order");
  }
}

caf::result<cancel_accepted> api_worker_state::cancel(const cancel_order& cmd) {
  if (!is_uuid(cmd.order_id))
    return make_api_error(api_errc::not_found, "no such order", "order_id");
  try {
    auto r = store->cancel(cmd.order_id, cmd.traceparent);
    switch (r.outcome) {
    case persistence::cancel_result::not_found:
      return make_api_error(api_errc::not_found, "no such order", "order_id");
    case persistence::cancel_result::already_cancelled:
      return make_api_error(api_errc::conflict, "order already cancelled",
                            "order_id");
    case persistence::cancel_result::cancelled:
      break;
    }
    event_log::hop("committed", cmd.order_id, r.event_id, cmd.traceparent,
                   {{"event_type", "OrderCancelled"}});
    return cancel_accepted{cmd.order_id, r.event_id};
  } catch (const persistence::db_error& e) {
    return to_api_error(e, "cancel order");
  }
}

caf::result<order_view> api_worker_state::view(const get_order& cmd) {
  if (!is_uuid(cmd.order_id))
    return make_api_error(api_errc::not_found, "no such order", "order_id");
  try {
    auto json = store->view_json(cmd.order_id);
    if (!json)
      return make_api_error(api_errc::not_found, "no such order", "order_id");
    return order_view{std::move(*json)};
  } catch (const persistence::db_error& e) {
    return to_api_error(e, "read order");
  }
}

caf::behavior api_worker(caf::stateful_actor<api_worker_state>* self,
                         context_ptr ctx) {
  // The store connects lazily, so a worker starts even while the database is
  // down and answers 503 until it is back.
  log_crashes(self, "api");
  self->state.store.emplace(ctx->dsn, ctx->cfg.relay.shards);
  self->state.ctx = std::move(ctx);
  return {
    [=](create_order& cmd) { return self->state.create(cmd); },
    [=](cancel_order& cmd) { return self->state.cancel(cmd); },
    [=](get_order& cmd) { return self->state.view(cmd); },
    // Commands are answered one at a time: nothing is held between them.
    [=](drain_atom) { return true; },
  };
}

} // namespace ef
