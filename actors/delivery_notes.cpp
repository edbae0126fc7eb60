#include "actors/delivery_notes.hpp"

#include "actors/event_log.hpp"
#include "messages/ids.hpp"
#include "messages/record_headers.hpp"
#include <eventforge/config/logging.hpp>

namespace ef {

delivery_notes::delivery_notes(context_ptr ctx, std::string consumer,
                               std::int32_t partition)
    : ctx_(std::move(ctx)), consumer_(std::move(consumer)),
      partition_(partition) {
  // nop
}

void delivery_notes::attempted() {
  ctx_->metrics->add("consumer_deliveries_total", {{"consumer", consumer_}});
}

void delivery_notes::delivered(const order_event& ev,
                               const partition_record& rec) {
  event_log::hop("delivered", ev.order_id, ev.event_id,
                 rec.header(record_header::traceparent),
                 {{"consumer", consumer_},
                  {"partition", std::to_string(rec.partition)},
                  {"offset", std::to_string(rec.offset)}});
}

void delivery_notes::outcome(const order_event& ev, apply_outcome outcome,
                             const partition_record& rec,
                             double handler_seconds) {
  telemetry::labels who{{"consumer", consumer_}};
  auto& trace = rec.header(record_header::traceparent);
  auto hop = [&](const char* name) {
    event_log::hop(name, ev.order_id, ev.event_id, trace,
                   {{"consumer", consumer_}});
  };
  switch (outcome) {
  case apply_outcome::order_missing:
    return; // a failure: the caller retries it
  case apply_outcome::duplicate:
    ctx_->metrics->add("consumer_duplicates_suppressed_total", who);
    if (ctx_->journal) {
      persistence::journal_line line;
      line.what = persistence::journal_line::kind::suppressed;
      line.actor = consumer_ + " p" + std::to_string(partition_);
      line.consumer = consumer_;
      line.order_id = ev.order_id;
      line.event_id = ev.event_id;
      line.partition = rec.partition;
      line.offset = rec.offset;
      ctx_->journal->record(std::move(line));
      journal_unflushed_ = true;
    }
    hop("suppressed");
    break;
  case apply_outcome::deferred:
    // Not applied, not lost: it comes again behind its predecessors.
    ctx_->metrics->add("consumer_deferred_total", who);
    hop("deferred");
    ef::log::info("{}: event {} of order {} waits for an earlier event of "
                  "its order; both are queued again",
                  consumer_, ev.event_id, ev.order_id);
    break;
  case apply_outcome::applied:
    ctx_->metrics->add("consumer_applied_total", who);
    hop("applied");
    ctx_->metrics->observe("end_to_end_seconds", who,
                           seconds_since_rfc3339(ev.occurred_at));
    break;
  }
  ctx_->metrics->observe("consumer_handler_seconds", who, handler_seconds);
}

void delivery_notes::before_offset_moves() {
  if (!journal_unflushed_)
    return;
  journal_unflushed_ = false;
  if (!ctx_->journal->flush(std::chrono::seconds(1)))
    ef::log::warn("{} p{}: recovery journal lines still waiting for the "
                  "database; committing the offset anyway",
                  consumer_, partition_);
}

} // namespace ef
