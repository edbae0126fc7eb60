#pragma once

#include <string>

namespace ef::persistence {

/// Adds connect_timeout (seconds) to a libpq connection string unless it sets
/// one, in keyword/value or URI form, so an outage fails fast instead of
/// hanging a request.
std::string with_connect_timeout(const std::string& dsn, int seconds);

} // namespace ef::persistence
