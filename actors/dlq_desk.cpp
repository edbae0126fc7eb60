#include "actors/dlq_desk.hpp"

#include "actors/crash_log.hpp"
#include "actors/thread_name.hpp"
#include "kafka/outbox_producer.hpp"
#include "persistence/db_error.hpp"
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/atoms.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace ef {

namespace {

using result = dlq_operations::result;

/// An action's outcome as the desk answers it: an error for what changed
/// nothing, else what it did (docs/dlq.md, "What replay and discard
/// answer").
caf::result<dlq_reply> answer(std::int64_t id,
                              const dlq_operations::outcome& r) {
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
  return dlq_reply{nlohmann::json{{"id", id},
                                  {"result", r.message},
                                  {"status", r.status},
                                  {"done", r.what == result::done}}
                     .dump()};
}

} // namespace

caf::result<dlq_reply> dlq_desk_state::execute(const dlq_command& cmd) {
  auto& store = ops->store();
  switch (cmd.verb) {
  case dlq_verb::list: {
    std::string out = "[";
    for (auto& e : store.list(cmd.filter, 1000))
      out += (out.size() > 1 ? "," : "") + to_json(e);
    return dlq_reply{out + "]"};
  }
  case dlq_verb::groups: {
    std::string out = "[";
    for (auto& g : store.groups())
      out += (out.size() > 1 ? "," : "") + to_json(g);
    return dlq_reply{out + "]"};
  }
  case dlq_verb::show: {
    auto e = store.get(cmd.id);
    if (!e)
      return make_api_error(api_errc::not_found, "no such DLQ entry", "id");
    return dlq_reply{to_json(*e)};
  }
  case dlq_verb::replay:
  case dlq_verb::discard:
    if (!store.get(cmd.id))
      return make_api_error(api_errc::not_found, "no such DLQ entry", "id");
    // Past this point the answer says what the action did: a failure after
    // a committed step is not "nothing was written" (docs/dlq.md).
    return answer(cmd.id, cmd.verb == dlq_verb::replay
                            ? ops->replay(cmd.id, cmd.actor)
                            : ops->discard(cmd.id, cmd.actor));
  case dlq_verb::replay_group: {
    auto steps = ops->replay_group(cmd.filter, cmd.actor, false);
    if (steps.empty())
      return make_api_error(api_errc::not_found,
                            "no parked entries in this group", "group");
    return dlq_reply{to_json(steps)};
  }
  }
  return make_api_error(api_errc::invalid, "unknown DLQ command", "verb");
}

dlq_desk_deps production_dlq_desk_deps(const context_ptr& ctx) {
  auto& cfg = ctx->cfg;
  auto bound = std::min(std::max(cfg.http.request_timeout_ms / 2, 1000),
                        cfg.kafka.delivery_timeout_ms);
  dlq_desk_deps deps;
  deps.store = [dsn = ctx->dsn] {
    return std::make_unique<persistence::dlq_store>(dsn);
  };
  deps.producer = [cluster = ctx->cluster, bound](const std::string& topic) {
    return std::make_unique<kafka::outbox_producer>(cluster, topic, bound,
                                                    "eventforge-dlq-desk");
  };
  return deps;
}

dlq_desk_actor::behavior_type
dlq_desk(dlq_desk_actor::stateful_pointer<dlq_desk_state> self,
         context_ptr ctx) {
  auto deps = production_dlq_desk_deps(ctx);
  return dlq_desk_with(self, std::move(ctx), std::move(deps));
}

dlq_desk_actor::behavior_type
dlq_desk_with(dlq_desk_actor::stateful_pointer<dlq_desk_state> self,
              context_ptr ctx, dlq_desk_deps deps) {
  log_crashes(self, "dlq desk");
  name_blocking_thread(self, "dlq-desk");
  self->state.ops = std::make_unique<dlq_operations>(
    deps.store(), std::move(deps.producer), ctx->faults);
  return {
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
    // Holds nothing between commands.
    [=](drain_atom) {
      return drain_report{true, {}};
    },
  };
}

} // namespace ef
