#pragma once

#include <eventforge/persistence/durable_state.hpp>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ef::persistence {

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
