#pragma once

// Internal to persistence/: the PostgreSQL advisory lock keys EventForge
// uses, as (class, key) pairs. Kept in one place so two features never pick
// the same class by accident.

namespace ef::persistence {

/// (1700, 0), transaction-scoped: serializes schema migrations.
constexpr int migration_lock_class = 1700;
/// (1701, shard), session-scoped: the relay that owns an outbox shard.
constexpr int relay_lock_class = 1701;
/// (1702, 0), session-scoped: the one active repairer of the cluster.
constexpr int repairer_lock_class = 1702;
/// (1703, 0), transaction-scoped: shared by every mark of sent rows,
/// exclusive while a new broker epoch begins.
constexpr int epoch_lock_class = 1703;
/// (1704, hashtext(consumer/order)), transaction-scoped: one consumer applies
/// the events of one order one at a time, even across overlapping workers.
constexpr int consumer_order_lock_class = 1704;

} // namespace ef::persistence
