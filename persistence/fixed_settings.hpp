#pragma once

#include <string>

namespace ef::persistence {

/// Settings every process sharing one database must agree on (e.g.
/// relay.shards: each outbox row stores its shard, so a process with another
/// value would strand rows or split one order's events across relays).
/// Records `value` under `key` on first use; throws std::runtime_error
/// naming both values when the database already holds a different one.
void require_fixed_setting(const std::string& dsn, const std::string& key,
                           const std::string& value);

} // namespace ef::persistence
