#pragma once

#include "actors/context.hpp"
#include "actors/dlq_operations.hpp"
#include "messages/tree_messages.hpp"

#include <caf/all.hpp>

#include <functional>
#include <memory>

namespace ef {

/// What a DLQ desk is built from: its store and the producers of its
/// replays (production_dlq_desk_deps), or fakes in deterministic actor
/// tests.
struct dlq_desk_deps {
  std::function<std::unique_ptr<persistence::dlq_records>()> store;
  dlq_operations::producer_factory producer;
};

/// The production store, and producers whose every publish is bounded by
/// half of http.request-timeout-ms (at most kafka.delivery-timeout-ms): a
/// replay answers within its request's time, "pending" if the broker did
/// not acknowledge by then (the DLQ handler's sweep publishes it again).
dlq_desk_deps production_dlq_desk_deps(const context_ptr& ctx);

/// Answers operator commands on the DLQ: list, groups, show (the
/// "dlq-reader" instance) and replay, discard, group replay (the
/// "dlq-desk" instance). Apart from the DLQ handler, whose sweep may hold
/// it for minutes during a broker outage, so an operator's answer never
/// waits behind it; and two of them, so a read never waits behind a
/// replay's publish. Blocking (libpq, librdkafka), so detached.
struct dlq_desk_state {
  std::unique_ptr<dlq_operations> ops;

  caf::result<dlq_reply> execute(const dlq_command& cmd);

  static inline const char* name = "dlq-desk";
};

dlq_desk_actor::behavior_type
dlq_desk(dlq_desk_actor::stateful_pointer<dlq_desk_state> self,
         context_ptr ctx);

/// The same actor, built from `deps`.
dlq_desk_actor::behavior_type
dlq_desk_with(dlq_desk_actor::stateful_pointer<dlq_desk_state> self,
              context_ptr ctx, dlq_desk_deps deps);

} // namespace ef
