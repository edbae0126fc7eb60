#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

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

/// The row counts alone, in one snapshot (cheap: what a wait for quiescence
/// polls; throws db_error).
durable_counts read_counts(const std::string& dsn);

/// Read-only checks of I1-I4 against the database (throws db_error).
/// `consumers`: the consumer names whose marks and effects are expected.
std::vector<violation> check_database(const std::string& dsn,
                                      const std::vector<std::string>& consumers,
                                      durable_counts& counts);

/// Every (consumer, event_id) mark, for checking offsets against decisions.
std::set<std::pair<std::string, std::string>>
processed_marks(const std::string& dsn);

} // namespace ef::persistence
