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
  /// What changed while the verifier read (row counts, log ends, committed
  /// offsets), e.g. "orders 40 -> 41"; empty if nothing did. A result read
  /// from a moving target describes no single state: not ok.
  std::string moving;
  bool ok() const { return violations.empty() && moving.empty(); }
};

/// Checks I1-I5 (docs/architecture.md, "Invariants") and that every consumer
/// group committed up to the log end. Offsets are committed after the marks, so
/// right after the last mark they can lag: while they still move, it waits for
/// them (at most 5 s, or until they stand still for half a second) before
/// it calls a gap a "drain" violation. Then it reads the counts, the log
/// ends and the offsets again and reports any change in `moving`. Call
/// ef::await_applied first to verify a settled state. Throws on
/// infrastructure errors.
verification verify(const config::settings& cfg, const std::string& dsn,
                    const std::string& brokers);

/// Human-readable report; lists at most `max_listed` violations.
std::string to_text(const verification& v, size_t max_listed = 50);

/// JSON document of the same.
std::string to_json(const verification& v);

} // namespace ef::app
