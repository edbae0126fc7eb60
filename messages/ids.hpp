#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ef {

/// A new RFC 9562 version-7 UUID: 48 bits of Unix milliseconds, then random
/// bits, so IDs sort by creation time (good B-tree locality for orders/outbox).
std::string new_uuid_v7();

/// True if `s` is a canonical lowercase or uppercase 8-4-4-4-12 UUID.
bool is_uuid(const std::string& s);

/// The current UTC time as RFC 3339 with milliseconds
/// ("2026-12-03T10:00:00.123Z"), as stamped on events and DLQ entries.
std::string now_rfc3339();

/// Seconds from an RFC 3339 UTC timestamp ("…T…:…:…[.ffffff]Z") until now;
/// 0 if it cannot be parsed or lies in the future.
double seconds_since_rfc3339(const std::string& rfc3339);

/// 64-bit FNV-1a of `bytes`, with the offset basis EventForge has always
/// used (1469598103934665603, one digit short of FNV's published one):
/// stored idempotency fingerprints depend on it. A stable, dependency-free
/// hash for those fingerprints, chaos decisions and the crash digest (not
/// for security).
std::uint64_t fnv1a64(std::string_view bytes);

/// The relay shard of an order: FNV-1a of the order ID modulo `shards`.
/// Stable across processes and versions; stored in the outbox row.
int shard_of(const std::string& order_id, int shards);

} // namespace ef
