#pragma once

// The DLQ conversation: operator commands sent to the EventForge root (by
// the admin HTTP endpoints or any actor), answered by the DLQ handler.
// Failures come back as caf::error in the "ef_api" category.

#include <caf/all.hpp>

#include <cstdint>
#include <string>

namespace ef {

/// The states of a DLQ entry (dlq_events.status; the schema's CHECK
/// constraint in persistence/migrations.cpp allows exactly these).
namespace dlq_status {
inline constexpr const char* parked = "parked";
/// A replay recorded its intent and may not be published yet; the DLQ
/// handler finishes it if it stays so (actors/dlq_operations.hpp).
inline constexpr const char* replaying = "replaying";
inline constexpr const char* replayed = "replayed";
inline constexpr const char* discarded = "discarded";
inline constexpr const char* all[] = {parked, replaying, replayed, discarded};
} // namespace dlq_status

/// What an operator asks of the DLQ.
enum class dlq_verb : std::uint8_t {
  list,    ///< entries, newest first; `filter` is a status or "" for all
  groups,  ///< parked entries grouped by failure fingerprint
  show,    ///< one entry by `id`
  replay,  ///< publish entry `id` again, keeping its event ID
  discard, ///< give up on parked entry `id`
  /// replay a fingerprint group (`filter`: its short id or fingerprint),
  /// each order's entries in order (docs/dlq.md)
  replay_group,
};

/// Whether `v` only reads: reads are answered by an actor of their own, so
/// they never wait behind a replay's publish.
inline bool is_read(dlq_verb v) {
  return v == dlq_verb::list || v == dlq_verb::groups || v == dlq_verb::show;
}

inline const char* to_string(dlq_verb v) {
  switch (v) {
  case dlq_verb::list:
    return "list";
  case dlq_verb::groups:
    return "groups";
  case dlq_verb::show:
    return "show";
  case dlq_verb::replay:
    return "replay";
  case dlq_verb::discard:
    return "discard";
  case dlq_verb::replay_group:
    return "replay_group";
  }
  return "unknown";
}

/// `actor` names who acts (recorded with replay and discard).
struct dlq_command {
  dlq_verb verb = dlq_verb::list;
  std::int64_t id = 0;
  std::string filter;
  std::string actor;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dlq_command& x) {
  return f(caf::meta::type_name("dlq_command"), x.verb, x.id, x.filter,
           x.actor);
}

/// The answer, as a JSON document.
struct dlq_reply {
  std::string json;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dlq_reply& x) {
  return f(caf::meta::type_name("dlq_reply"), x.json);
}

} // namespace ef
