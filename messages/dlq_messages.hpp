#pragma once

// The DLQ conversation: operator commands sent to the EventForge root (by
// the admin HTTP endpoints or any actor), answered by the DLQ handler.
// Failures come back as caf::error in the "ef_api" category.

#include <caf/all.hpp>

#include <cstdint>
#include <string>

namespace ef {

/// verb: "list" (filter = status or ""), "groups", "show", "replay",
/// "discard". `actor` names who acts (recorded with replay and discard).
struct dlq_command {
  std::string verb;
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
