#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ef::persistence {

/// The channel an outbox shard's inserts NOTIFY (migrations' trigger).
std::string outbox_channel(int shard);

/// The channel relays announce published records on, when their mark
/// commits: "partition:offset,..." with the highest offset per partition.
extern const char* const outbox_published_channel;

/// The channel a new broker epoch is announced on (migration 11's trigger).
extern const char* const broker_epoch_channel;

/// Who hears the announcements: a consumer group member that stops
/// fetching partitions it read to the end. Called on the listener's thread.
class published_sink {
public:
  virtual ~published_sink() = default;
  virtual void published(std::int32_t partition, std::int64_t offset) = 0;
  /// A new broker epoch was committed.
  virtual void epoch_began() {}
};

/// Where a group member hears the relays' announcements and new epochs:
/// the process's LISTEN session (outbox_listener), or a fake in
/// deterministic actor tests.
class announcement_source {
public:
  virtual ~announcement_source() = default;
  /// False once the session broke.
  virtual bool healthy() const = 0;
  /// `sink` hears every announcement and every new epoch from now on, while
  /// it lives.
  virtual void subscribe(std::weak_ptr<published_sink> sink) = 0;
};

/// One LISTEN session for the outbox channels of every relay shard of a
/// process, for the relays' announcements (outbox_published_channel) and
/// for new broker epochs (broker_epoch_channel). A
/// NOTIFY wakes every backend that LISTENs in the database, and each runs a
/// transaction to read the notification queue, whatever its channels: with one
/// LISTEN session per shard, every order cost the server one such transaction
/// per shard. Here it costs one per process.
///
/// Connects and LISTENs in the constructor (so a read after it cannot miss
/// an insert), then a thread of its own waits on the session. When the
/// session breaks, every waiter learns it (await throws): the relays crash
/// and restart as they did when their own LISTEN session broke, and get a
/// new listener (listener_slot). Throws db_error.
class outbox_listener : public announcement_source {
public:
  outbox_listener(const std::string& dsn, int shards);
  ~outbox_listener() override;
  outbox_listener(const outbox_listener&) = delete;
  outbox_listener& operator=(const outbox_listener&) = delete;

  /// Waits up to `timeout` for a NOTIFY on `shard`'s channel that arrived
  /// since the previous call for that shard returned; true if one did.
  /// Throws db_error (unavailable) once the session broke.
  bool await(int shard, std::chrono::milliseconds timeout);

  bool healthy() const override;
  void subscribe(std::weak_ptr<published_sink> sink) override;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Where the relay shards of one tree find their shared listener: made by
/// the first shard that needs it, replaced when it broke, released when no
/// shard holds it any more. Thread-safe.
class listener_slot {
public:
  std::shared_ptr<outbox_listener> get(const std::string& dsn, int shards);

private:
  std::mutex mtx_;
  std::weak_ptr<outbox_listener> current_;
};

} // namespace ef::persistence
