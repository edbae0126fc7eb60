#pragma once

#include <string>

namespace ef::persistence {

/// The application_name of a tree's sessions is this and its node name
/// (node.name): pg_stat_activity tells which node holds a lock.
inline constexpr const char* node_session_prefix = "eventforge@";

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

/// The connection string with application_name "eventforge@<node>" unless
/// it names an application itself: every session of a tree says which node
/// it is (pg_stat_activity), so `status` names relay owners by node.
std::string with_node_name(const std::string& dsn, const std::string& node);

} // namespace ef::persistence
