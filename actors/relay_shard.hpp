#pragma once

#include "actors/context.hpp"
#include "actors/relay_faults.hpp"
#include "actors/relay_window.hpp"
#include "config/backoff.hpp"
#include "kafka/outbox_producer.hpp"
#include "persistence/outbox_store.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace ef {

/// What a relay is built from: its shard's outbox store and a producer
/// (production_relay_deps), or fakes in deterministic actor tests. Both are
/// made lazily, inside the loop, so an outage is a crash there, not at spawn.
struct relay_deps {
  std::function<std::unique_ptr<persistence::relay_outbox>()> store;
  std::function<std::unique_ptr<kafka::event_publisher>()> producer;
};

relay_deps production_relay_deps(const context_ptr& ctx, int shard);

/// Relay for one outbox shard. Owns the shard cluster-wide through an
/// advisory lock, then loops: read the oldest unsent rows of the shard that
/// are not in flight, send them (key = order ID) with an idempotent
/// producer, and mark exactly the rows the broker acknowledged as their
/// reports come. Up to relay.max-in-flight rows are in flight, so a
/// partition whose leader does not answer holds only its own rows. Woken by
/// NOTIFY; polls slowly as a fallback. Blocking, hence detached.
///
/// A crash anywhere leaves unacknowledged or unmarked rows unsent; the
/// restarted relay (or another process's) republishes them. A row acked but
/// not yet marked is therefore published twice: the accepted price.
struct relay_shard_state {
  context_ptr ctx;
  relay_deps deps;
  std::unique_ptr<persistence::relay_outbox> store;
  std::unique_ptr<kafka::event_publisher> producer;
  std::optional<relay_faults> faults;
  /// The actor system's clock: the steady clock in production, the test
  /// coordinator's in deterministic tests (time moves only when they say).
  caf::actor_clock* clock = nullptr;
  int shard = 0;
  int batch_size = 0;
  std::chrono::milliseconds poll_interval{1000};
  bool owner = false;
  bool notified = true; // query once right after start
  caf::actor_clock::time_point next_query{};
  caf::actor_clock::time_point next_lead_check{};
  std::string lead_block;  ///< why publishing waits; empty: it does not
  double record_bytes = 0; ///< moving average of a published record's size
  /// Bytes this relay may still publish before the lead is measured again:
  /// its share of the room below relay.max-lead-bytes (-1: no limit known).
  double lead_budget = -1;
  /// When this relay last published to each partition (announce()).
  std::map<std::int32_t, caf::actor_clock::time_point> last_published;
  /// Waits after a batch the broker refused rows of (relay.publish-backoff-*).
  std::optional<config::backoff> publish_wait;
  /// Rows sent, not yet reported.
  relay_window window;
  std::uint64_t next_ticket = 1;
  /// Failed rows waiting for the window to empty before they are counted
  /// and the relay backs off: nothing new is sent meanwhile.
  std::vector<std::int64_t> failed;
  std::string first_error;

  /// One step of the loop; returns the delay before the next step.
  std::chrono::milliseconds round();
  /// After a drain: only the reports of the rows in flight are settled.
  std::chrono::milliseconds finish_round();
  bool unfinished() const { return !window.empty(); }
  /// Reads and sends the next rows, as many as the window and the lead
  /// budget allow.
  void send_next();
  /// Settles the reports that came within `wait_ms`: marks the acknowledged
  /// rows, keeps the failed ones for after_failure().
  void settle(int wait_ms);
  /// Once nothing is in flight: counts the failures, backs off.
  std::chrono::milliseconds after_failure();
  /// Marks acknowledged rows, per epoch they were read under. Returns false
  /// if the epoch moved on (the rows stay unsent and go out again).
  bool mark(const std::vector<relay_window::acked_row>& acked);
  /// Whether some partition already holds relay.max-lead-bytes beyond the
  /// slowest enabled consumer's committed offset (checked every 250 ms;
  /// records are counted by the broker, through the probe the shards of the
  /// process share, and sized by our moving average), or this relay spent
  /// its share of the room left (lead_budget) since the last check.
  bool too_far_ahead();
  /// Whether the mark announces a record just published to `partition`
  /// (kafka.park-idle-ms): unless this relay published there recently.
  bool announce(std::int32_t partition);
  /// Counts a batch about to be published: its size, and its bytes against
  /// the moving average of a record's size and the lead budget.
  void account_batch(const std::vector<persistence::outbox_row>& rows);

  /// How often the lead over the consumers is measured.
  static constexpr std::chrono::milliseconds lead_check_interval{250};

  static inline const char* name = "relay";
};

caf::behavior relay_shard(caf::stateful_actor<relay_shard_state>* self,
                          context_ptr ctx, int shard);

/// The same actor, built from `deps`.
caf::behavior relay_shard_with(caf::stateful_actor<relay_shard_state>* self,
                               context_ptr ctx, int shard, relay_deps deps);

} // namespace ef
