#include "actors/janitor.hpp"

#include "actors/crash_log.hpp"
#include "actors/round_loop.hpp"
#include "actors/thread_name.hpp"

#include <spdlog/spdlog.h>

namespace ef {

bool janitor_state::sweep() {
  auto& r = ctx->cfg.retention;
  bool more = false;
  if (r.outbox_s > 0) {
    auto n = store->delete_sent_outbox(r.outbox_s, r.batch_size);
    ctx->metrics->add("retention_deleted_total", {{"table", "outbox"}},
                      static_cast<std::uint64_t>(n));
    more = more || n == r.batch_size;
  }
  if (auto keys_s = ctx->cfg.api.idempotency_retention_s; keys_s > 0) {
    auto n = store->delete_idempotency_keys(keys_s, r.batch_size);
    ctx->metrics->add("retention_deleted_total",
                      {{"table", "idempotency_keys"}},
                      static_cast<std::uint64_t>(n));
    more = more || n == r.batch_size;
  }
  if (r.dlq_resolved_s > 0) {
    auto n = store->prune_resolved_dlq_entries(r.dlq_resolved_s, r.batch_size);
    ctx->metrics->add("retention_deleted_total", {{"table", "dlq_events"}},
                      static_cast<std::uint64_t>(n));
    more = more || n == r.batch_size;
  }
  if (r.processed_events_s > 0) {
    auto n = store->delete_processed_marks(r.processed_events_s, r.batch_size);
    ctx->metrics->add("retention_deleted_total",
                      {{"table", "processed_events"}},
                      static_cast<std::uint64_t>(n));
    more = more || n == r.batch_size;
    // The journal tells the story of events whose marks are kept: it goes
    // with them.
    auto j = store->delete_journal_lines(r.processed_events_s, r.batch_size);
    ctx->metrics->add("retention_deleted_total",
                      {{"table", "recovery_journal"}},
                      static_cast<std::uint64_t>(j));
    more = more || j == r.batch_size;
  }
  return more;
}

std::chrono::milliseconds janitor_state::round() {
  return sweep() ? std::chrono::milliseconds(10)
                 : std::chrono::milliseconds(ctx->cfg.retention.interval_ms);
}

janitor_deps production_janitor_deps(const context_ptr& ctx) {
  janitor_deps deps;
  deps.store = [ctx] { return persistence::database_retention(ctx->dsn); };
  return deps;
}

caf::behavior janitor(caf::stateful_actor<janitor_state>* self,
                      context_ptr ctx) {
  auto deps = production_janitor_deps(ctx);
  return janitor_with(self, std::move(ctx), std::move(deps));
}

caf::behavior janitor_with(caf::stateful_actor<janitor_state>* self,
                           context_ptr ctx, janitor_deps deps) {
  log_crashes(self, "janitor");
  name_blocking_thread(self, "janitor");
  self->state.ctx = std::move(ctx);
  self->state.store = deps.store();
  return round_loop(self);
}

} // namespace ef
