#pragma once

// What the invariant checks report: plain data, shared by the verifier a
// host calls (eventforge/embedded/verifier.hpp) and the queries behind it.

#include <string>

namespace ef::persistence {

/// One broken invariant, with the IDs needed to investigate it.
struct violation {
  std::string invariant; ///< "I1".."I5", "drain"
  std::string what;      ///< human-readable description
  std::string order_id;
  std::string event_id;
  std::string consumer;
};

/// Row counts the verifier reports alongside violations.
struct durable_counts {
  long orders = 0;
  long events = 0;
  long unsent = 0;
  long marks = 0;
  long effects = 0;
};

} // namespace ef::persistence
