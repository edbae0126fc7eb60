#pragma once

#include <eventforge/messages/events.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ef::persistence {

/// SQL text the relay runs per batch, exposed so that `eventforge bench`
/// hands the very same statements to pgbench.
namespace sql {
/// The claim, with the current broker epoch on every row: $1 shard, $2 limit.
extern const char* const unsent;
/// Shared with every other marker, exclusive for an epoch change: the mark's
/// transaction opening, sent with its BEGIN, so no parameters.
std::string epoch_guard(const std::string& lock_class);
/// The mark, run after epoch_guard as a statement of its own: $1 epoch, $2
/// seqs, $3 partitions, $4 offsets (arrays), $5 relay lock class, $6 shard,
/// $7 the announcement (text[]: payloads of "partition:offset,...", see
/// announcement_payloads; empty: none). Returns the
/// current epoch, whether this session holds the shard, and how many rows it
/// marked (none unless both hold; nothing is announced then either).
extern const char* const mark_sent;
} // namespace sql

/// An unsent outbox row as claimed by a relay.
struct outbox_row {
  std::int64_t seq = 0;
  order_event event;
};

/// Where the broker put one acknowledged row.
struct sent_position {
  std::int64_t seq = 0;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  /// Tell consumers that parked the partition (outbox_published_channel)
  /// when the mark commits.
  bool announce = false;
};

/// The oldest unsent rows of a shard and the broker epoch current when they
/// were read (one statement, before anything is published).
struct outbox_batch {
  int epoch = 0;
  std::vector<outbox_row> rows;
};

/// The announcement of a mark ("partition:offset" per partition, in
/// partition order) as NOTIFY payloads of at most `max_bytes` each.
/// PostgreSQL refuses a payload of 8000 bytes or more (22023), and a topic
/// may have thousands of partitions: one payload would fail the mark after
/// the broker acknowledged its rows.
std::vector<std::string>
announcement_payloads(const std::map<std::int32_t, std::int64_t>& highest,
                      std::size_t max_bytes = 7900);

/// What mark_sent() did.
enum class mark_result {
  marked,
  /// The broker epoch moved on while the batch was in flight: nothing was
  /// marked, the rows stay unsent and are published again.
  epoch_changed,
};

/// What a relay needs of its outbox shard: the production outbox_store, or
/// a fake in deterministic actor tests. Every call may throw db_error.
class relay_outbox {
public:
  virtual ~relay_outbox() = default;

  /// Tries to become the shard's only relay, cluster-wide. Non-blocking.
  virtual bool try_acquire_shard() = 0;

  /// Waits up to `timeout_ms` for a NOTIFY on the shard's channel; returns
  /// true if one arrived.
  virtual bool await_notify(int timeout_ms) = 0;

  /// The oldest unsent rows of the shard, in seq order, with the current
  /// broker epoch: read before the batch is published, so its positions are
  /// recorded under the epoch they were made in. Rows in `in_flight` (sent,
  /// not yet reported) are left out: a row committed late, below the seqs
  /// already sent, is still found.
  virtual outbox_batch unsent(int limit,
                              const std::vector<std::int64_t>& in_flight) = 0;

  /// Marks exactly these rows sent at their positions under `epoch`
  /// (idempotent for rows already marked). Refuses if `epoch` is no longer
  /// current. Throws if this session no longer holds the shard's lock: a
  /// relay that lost its shard must never mark what another relay owns.
  virtual mark_result mark_sent(int epoch,
                                const std::vector<sent_position>& acked) = 0;

  /// Counts a failed publish attempt on these rows and keeps the reason.
  virtual void record_failure(const std::vector<std::int64_t>& seqs,
                              const std::string& error) = 0;
};

class outbox_listener;

/// The relay's view of one outbox shard. Owns one connection, which holds the
/// shard's session-level advisory lock, so ownership dies with the session.
/// Wake-ups come from `listener`, shared by the shards of a process (a
/// private one if null). Throws db_error.
class outbox_store : public relay_outbox {
public:
  outbox_store(std::string dsn, int shard,
               std::shared_ptr<outbox_listener> listener = nullptr);
  ~outbox_store() override;

  bool try_acquire_shard() override;
  bool await_notify(int timeout_ms) override;
  outbox_batch unsent(int limit,
                      const std::vector<std::int64_t>& in_flight = {}) override;
  /// The current broker epoch on its own (tests, tools).
  int current_epoch();
  mark_result mark_sent(int epoch,
                        const std::vector<sent_position>& acked) override;
  void record_failure(const std::vector<std::int64_t>& seqs,
                      const std::string& error) override;

  int shard() const { return shard_; }

private:
  struct impl;
  std::unique_ptr<impl> impl_;
  int shard_;
};

} // namespace ef::persistence
