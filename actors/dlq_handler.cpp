#include "actors/dlq_handler.hpp"

#include "actors/crash_log.hpp"
#include "actors/thread_name.hpp"
#include "messages/ids.hpp"
#include "messages/record_headers.hpp"
#include "messages/text.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/config/options.hpp>
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/atoms.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>

namespace ef {

namespace {

std::string hex_of(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xf];
  }
  return out;
}

/// The DLQ entry a record of the DLQ topic describes. Anyone may write to
/// that topic, so nothing is trusted: a header that is not a number counts
/// as 0, an event ID that is not a UUID names the source position instead,
/// and the store keeps every text field printable.
persistence::dlq_entry entry_of(const partition_record& r) {
  persistence::dlq_entry e;
  auto num = [&](const char* h) -> long long {
    auto& v = r.header(h);
    char* end = nullptr;
    errno = 0;
    auto n = std::strtoll(v.c_str(), &end, 10);
    return v.empty() || errno != 0 || *end != '\0' ? 0 : n;
  };
  e.consumer = r.header(record_header::dlq_consumer);
  e.event_id = r.header(record_header::event_id);
  if (!is_uuid(e.event_id))
    e.event_id =
      "offset:" + std::to_string(num(record_header::dlq_source_partition)) +
      ":" + std::to_string(num(record_header::dlq_source_offset));
  e.order_key = r.key;
  e.key = r.key;
  e.value = r.value;
  e.traceparent = r.header(record_header::traceparent);
  e.error_class = r.header(record_header::dlq_error_class);
  e.error_message = r.header(record_header::dlq_error_message);
  e.attempts = static_cast<int>(num(record_header::dlq_attempts));
  e.source_topic = r.header(record_header::dlq_source_topic);
  e.source_partition =
    static_cast<int>(num(record_header::dlq_source_partition));
  e.source_offset = num(record_header::dlq_source_offset);
  e.first_failure_at = r.header(record_header::dlq_first_failure);
  e.last_failure_at = r.header(record_header::dlq_last_failure);
  return e;
}

} // namespace

std::string to_json(const persistence::dlq_entry& e) {
  // A foreign producer's value need not be JSON, nor even text: it is shown
  // as JSON if it is JSON, as a string if it is text, else in hex; the key
  // likewise. Every other field is printable text already (the store).
  auto value = nlohmann::json::parse(e.value, nullptr, false);
  nlohmann::json out{{"id", e.id},
                     {"consumer", e.consumer},
                     {"event_id", e.event_id},
                     {"order_key", e.order_key},
                     {"event_type", e.event_type},
                     {"error_class", e.error_class},
                     {"error_message", e.error_message},
                     {"fingerprint", e.fingerprint},
                     {"attempts", e.attempts},
                     {"source",
                      {{"topic", e.source_topic},
                       {"partition", e.source_partition},
                       {"offset", e.source_offset}}},
                     {"first_failure_at", e.first_failure_at},
                     {"last_failure_at", e.last_failure_at},
                     {"parked_at", e.parked_at},
                     {"status", e.status},
                     {"age_seconds", e.age_seconds}};
  if (!e.traceparent.empty())
    out["traceparent"] = e.traceparent;
  if (!is_text(e.key))
    out["key_hex"] = hex_of(e.key);
  if (!value.is_discarded())
    out["value"] = std::move(value);
  else if (is_text(e.value))
    out["value"] = e.value;
  else
    out["value_hex"] = hex_of(e.value);
  // Replace, never throw, should anything still not be UTF-8.
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

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
  auto e = entry_of(*rec);
  if (e.consumer.empty()) {
    ef::log::error("dlq: record {}/{} has no dlq.consumer header; skipped",
                   rec->partition, rec->offset);
  } else {
    ops->store().park(e, false);
  }
  // The row is stored (or the record was not ours): the offset may move.
  if (auto err = consumer->commit({{rec->partition, rec->offset + 1}}))
    ef::log::warn("dlq: offset commit failed: {}", kafka::describe(err));
}

void dlq_handler_state::sweep_replays() {
  auto now = clock->now();
  if (now < next_sweep)
    return;
  // Both are safety nets (a replay gets its whole delivery timeout before
  // the sweep publishes it again; a discard releases what it held itself):
  // every 5 s, so an idle process does not run two transactions a second.
  next_sweep = now + std::chrono::seconds(5);
  // A replay in flight gets its whole delivery timeout before the sweep
  // publishes it again.
  auto grace =
    std::chrono::milliseconds(ctx->cfg.kafka.delivery_timeout_ms + 1000);
  try {
    ops->sweep_replays(grace);
    ops->release_orphans();
  } catch (const persistence::db_error& e) {
    // Read again next time; an outage is reported by others.
    ef::log::debug("dlq: cannot look for unfinished replays: {}", e.what());
  }
}

caf::result<dlq_reply> dlq_handler_state::execute(const dlq_command& cmd) {
  auto& store = ops->store();
  switch (cmd.verb) {
  case dlq_verb::list: {
    auto all = nlohmann::json::array();
    for (auto& e : store.list(cmd.filter, 1000))
      all.push_back(nlohmann::json::parse(to_json(e)));
    return dlq_reply{all.dump()};
  }
  case dlq_verb::groups: {
    auto all = nlohmann::json::array();
    for (auto& g : store.groups())
      all.push_back({{"fingerprint", g.fingerprint},
                     {"error_class", g.error_class},
                     {"example", g.example_message},
                     {"count", g.count},
                     {"oldest_age_seconds", g.oldest_age_seconds}});
    return dlq_reply{all.dump()};
  }
  case dlq_verb::show: {
    auto e = store.get(cmd.id);
    if (!e)
      return make_api_error(api_errc::not_found, "no such DLQ entry", "id");
    return dlq_reply{to_json(*e)};
  }
  case dlq_verb::replay:
  case dlq_verb::discard: {
    if (!store.get(cmd.id))
      return make_api_error(api_errc::not_found, "no such DLQ entry", "id");
    // Past this point the answer says what the action did: a failure after
    // a committed step is not "nothing was written" (docs/dlq.md).
    auto r = cmd.verb == dlq_verb::replay ? ops->replay(cmd.id, cmd.actor)
                                          : ops->discard(cmd.id, cmd.actor);
    using result = dlq_operations::result;
    switch (r.what) {
    case result::refused:
      return make_api_error(api_errc::conflict, r.message, "id");
    case result::unavailable:
      return make_api_error(api_errc::unavailable, r.message);
    case result::unknown:
      return make_api_error(api_errc::outcome_unknown, r.message);
    case result::done:
    case result::pending:
      break;
    }
    return dlq_reply{nlohmann::json{{"id", cmd.id},
                                    {"result", r.message},
                                    {"status", r.status},
                                    {"done", r.what == result::done}}
                       .dump()};
  }
  }
  return make_api_error(api_errc::invalid, "unknown DLQ command", "verb");
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
    [=](dlq_command& cmd) -> caf::result<dlq_reply> {
      try {
        return self->state.execute(cmd);
      } catch (const injected_crash&) {
        throw; // a crash point of the replay: the actor fails, as it would
      } catch (const persistence::db_error& e) {
        // A read (list, show, groups, the entry's existence) failed: reads
        // change nothing. Replay and discard answer for themselves above.
        return make_api_error(api_errc::unavailable,
                              std::string("database: ") + e.what());
      } catch (const std::exception& e) {
        return make_api_error(api_errc::unavailable, e.what());
      }
    },
  };
}

} // namespace ef
