#pragma once

#include <eventforge/config/settings.hpp>
#include <eventforge/persistence/durable_state.hpp>

#include <string>
#include <vector>

namespace ef::app {

/// What the verifier found, from durable state only: PostgreSQL rows and the
/// broker's log and committed offsets.
struct verification {
  persistence::durable_counts counts;
  long records = 0;    ///< records in the topic (duplicates included)
  long duplicates = 0; ///< records whose event ID appeared before
  std::vector<persistence::violation> violations;
  bool ok() const { return violations.empty(); }
};

/// Checks I1-I5 (brief, section 1) and that every consumer group committed
/// up to the log end. Throws on infrastructure errors.
verification verify(const config::settings& cfg, const std::string& dsn,
                    const std::string& brokers);

/// Human-readable report; lists at most `max_listed` violations.
std::string to_text(const verification& v, size_t max_listed = 50);

/// JSON document of the same.
std::string to_json(const verification& v);

} // namespace ef::app
