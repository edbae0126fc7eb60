#include "actors/dlq_handler.hpp"

#include "actors/crash_log.hpp"
#include "config/options.hpp"
#include "messages/api_error.hpp"
#include "messages/atoms.hpp"
#include "messages/record_headers.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace ef {

namespace {

persistence::dlq_entry entry_of(const partition_record& r) {
  persistence::dlq_entry e;
  e.consumer = r.header(record_header::dlq_consumer);
  e.event_id = r.header(record_header::event_id);
  if (e.event_id.empty())
    e.event_id = "offset:" + r.header(record_header::dlq_source_partition) +
                 ":" + r.header(record_header::dlq_source_offset);
  e.order_key = r.key;
  e.value = r.value;
  e.error_class = r.header(record_header::dlq_error_class);
  e.error_message = r.header(record_header::dlq_error_message);
  auto num = [&](const char* h) {
    auto& v = r.header(h);
    return v.empty() ? 0LL : std::stoll(v);
  };
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
  auto value = nlohmann::json::parse(e.value, nullptr, false);
  return nlohmann::json{
    {"id", e.id},
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
    {"age_seconds", e.age_seconds},
    {"value", value.is_discarded() ? nlohmann::json(e.value) : value}}
    .dump();
}

void dlq_handler_state::poll_once() {
  // Errors of one join arrive one per poll: gather them for a moment, then
  // restart them together.
  if (!lost.empty() && std::chrono::steady_clock::now() - lost_since >
                         std::chrono::milliseconds(100)) {
    // The DLQ topic is a copy: each entry was stored in dlq_events by its
    // consumer before that consumer's offset moved. Losing DLQ records loses
    // nothing, so reread what is left; storing an entry twice is a no-op.
    std::map<std::int32_t, std::int64_t> from_start;
    for (auto& [p, offset] : lost) {
      spdlog::info("dlq: partition {} position {} is not on the broker; "
                   "rereading from the log start",
                   p, offset);
      from_start[p] = -1;
    }
    consumer->restart_at(from_start);
    lost.clear();
  }
  auto rec = consumer->poll(50);
  if (!rec)
    return;
  auto e = entry_of(*rec);
  if (e.consumer.empty()) {
    spdlog::error("dlq: record {}/{} has no dlq.consumer header; skipped",
                  rec->partition, rec->offset);
  } else {
    ops->store().park(e, false);
  }
  // The row is stored (or the record was not ours): the offset may move.
  auto err = consumer->commit({{rec->partition, rec->offset + 1}});
  if (!err.empty())
    spdlog::warn("dlq: offset commit failed: {}", err);
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
    auto r = cmd.verb == dlq_verb::replay ? ops->replay(cmd.id, cmd.actor)
                                          : ops->discard(cmd.id, cmd.actor);
    if (!r.ok)
      return make_api_error(api_errc::conflict, r.message, "id");
    return dlq_reply{
      nlohmann::json{{"id", cmd.id}, {"result", r.message}}.dump()};
  }
  }
  return make_api_error(api_errc::invalid, "unknown DLQ command", "verb");
}

dlq_handler_actor::behavior_type
dlq_handler(dlq_handler_actor::stateful_pointer<dlq_handler_state> self,
            context_ptr ctx) {
  log_crashes(self, "dlq handler");
  auto& st = self->state;
  st.ops = std::make_unique<dlq_operations>(ctx->dsn, ctx->brokers,
                                            ctx->cfg.kafka.delivery_timeout_ms);
  kafka::group_consumer::callbacks cbs;
  auto* state = &st;
  cbs.position_lost = [state](std::int32_t p, std::int64_t offset) {
    if (state->lost.empty())
      state->lost_since = std::chrono::steady_clock::now();
    state->lost[p] = offset;
  };
  st.consumer = std::make_unique<kafka::group_consumer>(
    ctx->brokers, "eventforge.dlq", config::dlq_topic_of(ctx->cfg),
    ctx->cfg.kafka.session_timeout_ms, ctx->cfg.kafka.fetch_wait_max_ms,
    std::move(cbs));
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
      } catch (const std::exception& e) {
        return make_api_error(api_errc::unavailable, e.what());
      }
    },
  };
}

} // namespace ef
