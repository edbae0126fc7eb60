#pragma once

// The tree's own conversation, none of a host's business (a host speaks to
// the root through <eventforge/messages/interfaces.hpp>): the rounds and
// timers actors send themselves, what a consumer's group member and its
// partition actors pass each other, and the typed faces of the actors the
// root delegates to.

#include <eventforge/messages/interfaces.hpp>

#include <caf/all.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ef {

// -- atoms --------------------------------------------------------------------

/// Self-sent by polling actors (relay, group member) to run one round.
using poll_atom = caf::atom_constant<caf::atom("poll")>;
/// Self-sent by a supervisor to start a crashed child again after backoff.
using restart_atom = caf::atom_constant<caf::atom("restart")>;
/// Asks a supervisor for its live children: map<string name, actor>.
using children_atom = caf::atom_constant<caf::atom("children")>;
/// Asks a partition actor to retry the record it is holding.
using retry_atom = caf::atom_constant<caf::atom("retry")>;
/// Self-sent by an API actor or a partition actor to apply what it has
/// gathered: it queues behind the messages already waiting, so everything
/// that arrived meanwhile shares one transaction.
using flush_atom = caf::atom_constant<caf::atom("flush")>;

// -- records between a group member and its partition actors -----------------

/// Where a delivered copy of an event was read; -1 when not read from a
/// partition.
struct delivery_position {
  std::int32_t partition = -1;
  std::int64_t offset = -1;
};

/// A record fetched from a partition, handed by the group member to the actor
/// that owns that partition.
struct partition_record {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string key;
  std::string value;
  std::string event_id_header;
  std::vector<std::pair<std::string, std::string>> headers;

  /// The value of header `name`, or "" if absent.
  const std::string& header(const std::string& name) const {
    static const std::string none;
    for (auto& [k, v] : headers)
      if (k == name)
        return v;
    return none;
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, partition_record& x) {
  return f(caf::meta::type_name("partition_record"), x.partition, x.offset,
           x.key, x.value, x.event_id_header, x.headers);
}

/// A partition actor finished a record: its DB transaction committed (or it
/// was a duplicate / undecodable). The group member may now commit offset+1.
struct record_done {
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string order_id; ///< for the "offset_committed" hop line only
  std::string event_id;
  std::string traceparent;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, record_done& x) {
  return f(caf::meta::type_name("record_done"), x.partition, x.offset,
           x.order_id, x.event_id, x.traceparent);
}

// -- typed faces of the actors the root delegates to --------------------------

/// An API worker: the order commands, plus its own group-commit tick and
/// the drain its supervisor passes down.
using api_worker_actor =
  order_api::extend<caf::reacts_to<flush_atom>,
                    caf::replies_to<drain_atom>::with<drain_report>>;

/// The DLQ handler: its poll loop (the DLQ topic, the replay sweep) and the
/// drain.
using dlq_handler_actor =
  caf::typed_actor<caf::reacts_to<poll_atom>,
                   caf::replies_to<drain_atom>::with<drain_report>>;

/// A DLQ desk: operator commands, and the drain.
using dlq_desk_actor =
  dlq_api::extend<caf::replies_to<drain_atom>::with<drain_report>>;

/// A supervisor's live children, by name.
using child_map = std::map<std::string, caf::actor>;

/// Every supervisor of the tree: the root's face (order and DLQ commands
/// passed down their routes, the counters, the drain), the restart it sends
/// itself after a child's backoff, and its live children. The root is one,
/// so ef::start hands it out as an eventforge_actor without a cast.
using supervisor_actor =
  eventforge_actor::extend<caf::reacts_to<restart_atom, std::uint64_t>,
                           caf::replies_to<children_atom>::with<child_map>>;

} // namespace ef
