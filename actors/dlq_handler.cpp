#include "actors/dlq_handler.hpp"

#include "actors/crash_log.hpp"
#include "actors/thread_name.hpp"
#include "messages/ids.hpp"
#include "messages/record_headers.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/config/options.hpp>
#include <eventforge/messages/atoms.hpp>

#include <cerrno>
#include <cstdlib>

namespace ef {

namespace {

/// A failure time header as the consumers write it (RFC 3339 UTC, e.g.
/// 2026-12-07T21:04:17.109Z), else "" (the store then takes the time of
/// storing): a foreign record's header must not stop the DLQ's reader.
std::string timestamp_or_now(const std::string& h) {
  auto digits = [&](size_t from, size_t n) {
    for (size_t i = from; i < from + n; ++i)
      if (i >= h.size() || h[i] < '0' || h[i] > '9')
        return false;
    return true;
  };
  bool ok = h.size() >= 20 && h.size() <= 32 && digits(0, 4) && h[4] == '-' &&
            digits(5, 2) && h[7] == '-' && digits(8, 2) && h[10] == 'T' &&
            digits(11, 2) && h[13] == ':' && digits(14, 2) && h[16] == ':' &&
            digits(17, 2) && h.back() == 'Z';
  return ok ? h : "";
}

/// The DLQ entry a record of the DLQ topic describes. Anyone may write to
/// that topic, so nothing is trusted: a header that is not a number counts
/// as 0, an event ID that is not a UUID names the source position instead,
/// and the store keeps every text field printable.
persistence::dlq_entry entry_of(const partition_record& r,
                                const std::string& source_topic) {
  persistence::dlq_entry e;
  auto num = [&](const char* h) -> long long {
    auto& v = r.header(h);
    char* end = nullptr;
    errno = 0;
    auto n = std::strtoll(v.c_str(), &end, 10);
    return v.empty() || errno != 0 || *end != '\0' ? 0 : n;
  };
  e.consumer = r.header(record_header::dlq_consumer);
  // Not a UUID: the store names the entry by the record's bytes, as the
  // consumer that parked it did (dlq_records::undecodable_key).
  e.event_id = r.header(record_header::event_id);
  if (!is_uuid(e.event_id))
    e.event_id.clear();
  e.order_key = r.key;
  e.key = r.key;
  e.value = r.value;
  e.traceparent = r.header(record_header::traceparent);
  e.error_class = r.header(record_header::dlq_error_class);
  e.error_message = r.header(record_header::dlq_error_message);
  e.attempts = static_cast<int>(num(record_header::dlq_attempts));
  // The topic this DLQ belongs to: a replay publishes there, whatever a
  // header of the record claims.
  e.source_topic = source_topic;
  e.source_partition =
    static_cast<int>(num(record_header::dlq_source_partition));
  e.source_offset = num(record_header::dlq_source_offset);
  e.first_failure_at =
    timestamp_or_now(r.header(record_header::dlq_first_failure));
  e.last_failure_at =
    timestamp_or_now(r.header(record_header::dlq_last_failure));
  return e;
}

} // namespace

void dlq_handler_state::poll_once() {
  // Errors of one join arrive one per poll: gather them for a moment, then
  // restart them together.
  if (!lost.empty() &&
      clock->now() - lost_since > std::chrono::milliseconds(100)) {
    // The DLQ topic is a copy: each entry was stored in dlq_events by its
    // consumer before that consumer's offset moved. Losing DLQ records loses
    // nothing, so reread what is left; storing an entry twice is a no-op.
    std::map<std::int32_t, std::int64_t> from_start;
    for (auto& [p, offset] : lost) {
      // -1: nothing read yet (a first start), not a loss: debug only.
      if (offset < 0)
        ef::log::debug("dlq: partition {} has no position yet; reading from "
                       "the log start",
                       p);
      else
        ef::log::info("dlq: partition {} position {} is not on the broker; "
                      "rereading from the log start",
                      p, offset);
      from_start[p] = -1;
    }
    consumer->restart_at(from_start, {});
    lost.clear();
  }
  sweep_replays();
  auto rec = consumer->poll(50);
  if (!rec)
    return;
  auto e = entry_of(*rec, ctx->cfg.kafka.topic);
  if (e.consumer.empty()) {
    ef::log::error("dlq: record {}/{} has no dlq.consumer header; skipped",
                   rec->partition, rec->offset);
  } else {
    try {
      ops->store().park(e, persistence::park_as::copy);
    } catch (const persistence::db_error& err) {
      // An outage: the record is read again after the restart. A record
      // the database refuses for good (a foreign one) must not stop the
      // reader: its consumer stored its own entry before it moved on.
      if (err.code() != persistence::db_errc::permanent)
        throw;
      ef::log::error("dlq: record {}/{} cannot be stored ({}); skipped",
                     rec->partition, rec->offset, err.what());
    }
  }
  // The row is stored (or the record was not ours): the offset may move.
  if (auto err = consumer->commit({{rec->partition, rec->offset + 1}}))
    ef::log::warn("dlq: offset commit failed: {}", kafka::describe(err));
}

void dlq_handler_state::sweep_replays() {
  auto now = clock->now();
  if (now < next_sweep)
    return;
  // Safety nets (a replay gets its whole delivery timeout before the sweep
  // publishes it again; a discard releases what it held itself) and the
  // publish of releases recorded without a broker: every 5 s, so an idle
  // process does not run two transactions a second.
  next_sweep = now + std::chrono::seconds(5);
  // A replay in flight gets its whole delivery timeout before the sweep
  // publishes it again.
  auto grace =
    std::chrono::milliseconds(ctx->cfg.kafka.delivery_timeout_ms + 1000);
  try {
    for (auto& e : ops->give_up_replays(
           std::chrono::milliseconds(ctx->cfg.dlq.replay_give_up_ms)))
      ctx->metrics->add("dlq_replays_given_up_total",
                        {{"consumer", e.consumer}});
    ops->sweep_replays(grace);
    ops->release_orphans();
  } catch (const persistence::db_error& e) {
    // Read again next time; an outage is reported by others.
    ef::log::debug("dlq: cannot look for unfinished replays: {}", e.what());
  }
}

dlq_handler_deps production_dlq_handler_deps(const context_ptr& ctx) {
  dlq_handler_deps deps;
  deps.store = [dsn = ctx->dsn] {
    return std::make_unique<persistence::dlq_store>(dsn);
  };
  deps.producer =
    [cluster = ctx->cluster,
     timeout = ctx->cfg.kafka.delivery_timeout_ms](const std::string& topic) {
      return std::make_unique<kafka::outbox_producer>(cluster, topic, timeout,
                                                      "eventforge-dlq-replay");
    };
  // A parked event waits for an operator, not for milliseconds: the DLQ is
  // fetched with its own, long wait (on the in-process broker an empty
  // fetch is answered only after it; 5 ms cost 200 idle fetches a second).
  deps.consumer = [ctx](kafka::group_client::callbacks cbs) {
    return std::make_unique<kafka::group_consumer>(
      ctx->cluster, "eventforge.dlq", config::dlq_topic_of(ctx->cfg),
      ctx->cfg.kafka.session_timeout_ms, ctx->cfg.kafka.dlq_fetch_wait_ms,
      std::move(cbs));
  };
  return deps;
}

dlq_handler_actor::behavior_type
dlq_handler(dlq_handler_actor::stateful_pointer<dlq_handler_state> self,
            context_ptr ctx) {
  auto deps = production_dlq_handler_deps(ctx);
  return dlq_handler_with(self, std::move(ctx), std::move(deps));
}

dlq_handler_actor::behavior_type
dlq_handler_with(dlq_handler_actor::stateful_pointer<dlq_handler_state> self,
                 context_ptr ctx, dlq_handler_deps deps) {
  log_crashes(self, "dlq handler");
  name_blocking_thread(self, "dlq");
  auto& st = self->state;
  st.clock = &self->clock();
  st.ops = std::make_unique<dlq_operations>(
    deps.store(), std::move(deps.producer), ctx->faults);
  kafka::group_client::callbacks cbs;
  auto* state = &st;
  cbs.position_lost = [state](std::int32_t p, std::int64_t offset) {
    if (state->lost.empty())
      state->lost_since = state->clock->now();
    state->lost[p] = offset;
  };
  st.consumer = deps.consumer(std::move(cbs));
  st.ctx = std::move(ctx);
  self->send(self, poll_atom::value);
  return {
    [=](poll_atom) {
      self->state.poll_once();
      self->send(self, poll_atom::value);
    },
    // Each DLQ record is stored before its offset commit: nothing is held.
    [=](drain_atom) {
      return drain_report{true, {}};
    },
  };
}

} // namespace ef
