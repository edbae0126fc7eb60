#pragma once

#include <string>

namespace ef::persistence {

/// Adds connect_timeout (seconds) to a libpq connection string unless it sets
/// one, in keyword/value or URI form, so an outage fails fast instead of
/// hanging a request.
std::string with_connect_timeout(const std::string& dsn, int seconds);

/// The connection string with every password replaced by "***", in
/// keyword/value form (password=... or password='...') and URI form
/// (user:password@ and ?password=...): what the ready line and every log
/// line show of a DSN.
std::string redact_password(const std::string& dsn);

/// Appends `key=value` to a libpq connection string in keyword/value or URI
/// form (quoted or percent-encoded as that form needs). Does not check
/// whether the string already sets `key`.
std::string with_dsn_param(const std::string& dsn, const std::string& key,
                           const std::string& value);

} // namespace ef::persistence
