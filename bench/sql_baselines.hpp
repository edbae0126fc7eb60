#pragma once

#include <string>
#include <vector>

namespace ef::bench {

/// pgbench baselines over the very SQL EventForge runs
/// (sql::*), in a scratch copy of the schema so that their rows
/// never reach the pipeline.
///
/// The statements are the hot paths' own texts; only their parameters
/// become pgbench expressions: IDs are md5-derived UUIDs of a random number
/// (`md5('o' || n)::uuid` is order n of the seed), strings and JSON are
/// literals of realistic size.

/// The schema holding the copy.
inline constexpr const char* scratch_schema = "ef_bench_sql";

/// `dsn` with search_path set to the scratch schema.
std::string scratch_dsn(const std::string& dsn);

/// (Re)creates the scratch schema with EventForge's migrations and seeds
/// `orders` orders (IDs md5('o' || n), n = 1..orders), one item each, and
/// their unsent OrderCreated outbox rows (event IDs md5('e' || n), shard
/// n % shards). Throws db_error.
void prepare_scratch(const std::string& dsn, long orders, int shards);

/// Drops the scratch schema.
void drop_scratch(const std::string& dsn);

/// One API order as a transaction of its own: BEGIN, the create statement,
/// COMMIT (what a lone request costs; the API's group commit shares the
/// transaction between concurrent requests).
std::string api_order_script(int shards);

/// `events_per_tx` OrderCreated events applied by the fulfillment consumer
/// in one transaction, with the statements event_applier runs for them: the
/// guard (fresh event IDs, so it always passes, as for new events), the
/// order locks and reads, the order histories, the status updates and the
/// effect rows. Client c works on seeded orders of its own range, as a
/// partition actor owns its orders.
std::string consumer_script(long seeded_orders, int clients, int events_per_tx);

/// The floor: one order's durable work done by PostgreSQL alone, with
/// EventForge's own statements and nothing batched. Per order: the API
/// transaction (its insert NOTIFYs the shard's channel), the relay's claim
/// of that one row and its mark transaction (epoch guard, ownership check,
/// mark, NOTIFY of the announcement), then one transaction per consumer in
/// `consumers` with event_applier's statements and the built-in plug-ins'
/// own (billing's balance, fulfillment's status; another plug-in's business
/// statements are unknown here, so only EventForge's). Client c writes to
/// and relays shard c % shards: run it with at most `shards` clients.
std::string floor_script(int shards, const std::vector<std::string>& consumers);

/// One relay batch of shard (client ID % shards): the claim of up to
/// `batch` unsent rows and the mark transaction (epoch guard, shard
/// ownership check, mark). Run it with -t (seeded rows per shard / batch)
/// so every claim is full.
std::string relay_script(int shards, int batch);

} // namespace ef::bench
