#pragma once

// The typed faces of EventForge's actors. A host holds the root as an
// `eventforge_actor`: a request whose message or reply handler is not in
// these lists does not compile (tests/compile_fail/ shows it).

#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/control_messages.hpp>
#include <eventforge/messages/dlq_messages.hpp>
#include <eventforge/messages/order_messages.hpp>

#include <caf/typed_actor.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace ef {

/// Order commands: answered by every API worker, and by the root, which
/// hands each to the next live worker. Failures: caf::error in category
/// "ef_api" (messages/api_error.hpp).
using order_api =
  caf::typed_actor<caf::replies_to<create_order>::with<order_accepted>,
                   caf::replies_to<cancel_order>::with<cancel_accepted>,
                   caf::replies_to<get_order>::with<order_view>>;

/// Operator commands on parked events: answered by the DLQ handler, and by
/// the root, which hands them to it.
using dlq_api = caf::typed_actor<caf::replies_to<dlq_command>::with<dlq_reply>>;

/// Every telemetry series of the tree and its value.
using counter_map = std::map<std::string, std::uint64_t>;

/// Asking the tree as a whole: its counters, and a graceful drain (every
/// relay finishes its batch, every consumer applies and commits what it
/// fetched; the report says whether all did and names those that did not;
/// the tree keeps running, idle).
using control_api =
  caf::typed_actor<caf::replies_to<stats_atom>::with<counter_map>,
                   caf::replies_to<drain_atom>::with<drain_report>>;

/// The root of the tree, as ef::start() returns it to the host. To stop the
/// tree, send it an exit message and wait for its down message.
using eventforge_actor = order_api::extend_with<dlq_api, control_api>;

} // namespace ef
