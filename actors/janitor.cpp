#include "actors/janitor.hpp"

#include "actors/crash_log.hpp"
#include "actors/round_loop.hpp"
#include "actors/thread_name.hpp"
#include "persistence/ops_queries.hpp"
#include "persistence/recovery_journal.hpp"

#include <spdlog/spdlog.h>

namespace ef {

bool janitor_state::sweep() {
  auto& r = ctx->cfg.retention;
  bool more = false;
  if (r.outbox_s > 0) {
    auto n =
      persistence::delete_sent_outbox(ctx->dsn, r.outbox_s, r.batch_size);
    ctx->metrics->add("retention_deleted_total", {{"table", "outbox"}},
                      static_cast<std::uint64_t>(n));
    more = more || n == r.batch_size;
  }
  if (auto keys_s = ctx->cfg.api.idempotency_retention_s; keys_s > 0) {
    auto n =
      persistence::delete_idempotency_keys(ctx->dsn, keys_s, r.batch_size);
    ctx->metrics->add("retention_deleted_total",
                      {{"table", "idempotency_keys"}},
                      static_cast<std::uint64_t>(n));
    more = more || n == r.batch_size;
  }
  if (r.dlq_resolved_s > 0) {
    auto n = persistence::prune_resolved_dlq_entries(ctx->dsn, r.dlq_resolved_s,
                                                     r.batch_size);
    ctx->metrics->add("retention_deleted_total", {{"table", "dlq_events"}},
                      static_cast<std::uint64_t>(n));
    more = more || n == r.batch_size;
  }
  if (r.processed_events_s > 0) {
    auto n = persistence::delete_processed_marks(ctx->dsn, r.processed_events_s,
                                                 r.batch_size);
    ctx->metrics->add("retention_deleted_total",
                      {{"table", "processed_events"}},
                      static_cast<std::uint64_t>(n));
    more = more || n == r.batch_size;
    // The journal tells the story of events whose marks are kept: it goes
    // with them.
    auto j = persistence::delete_journal_lines(ctx->dsn, r.processed_events_s,
                                               r.batch_size);
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

caf::behavior janitor(caf::stateful_actor<janitor_state>* self,
                      context_ptr ctx) {
  log_crashes(self, "janitor");
  name_blocking_thread(self, "janitor");
  self->state.ctx = std::move(ctx);
  return round_loop(self);
}

} // namespace ef
