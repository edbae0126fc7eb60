#pragma once

#include "actors/context.hpp"
#include "actors/partition_worker.hpp"
#include "actors/restart_policy.hpp"
#include "kafka/group_consumer.hpp"
#include "messages/control_messages.hpp"
#include "persistence/repair_store.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>

namespace ef {

/// One consumer's member of its Kafka consumer group. Owns the consumer
/// client, follows rebalances, and runs one partition actor per OWNED
/// partition (spawned on assign, stopped on revoke). It feeds each record to
/// its partition's actor and commits "offset + 1" only after that actor
/// reports the record's DB transaction done. It supervises its partition
/// actors: a crashed one is replaced, and the partition is rewound to its
/// committed offset, which is exactly how real redelivery happens.
///
/// It never jumps over records silently. When the broker no longer holds a
/// partition's position (trimmed under a slow consumer, a new broker, a
/// recreated topic), it records the gap and queues this consumer's unapplied
/// events in it again (one transaction), logs and counts it, and only then
/// resumes at the log start. When the repairer begins a new broker epoch,
/// positions in the old logs mean nothing: it rereads every owned partition
/// from the start (duplicates are suppressed).
struct group_member_state {
  struct owned_partition {
    caf::actor worker;
    int in_flight = 0;
    bool paused = false;
    std::int64_t done_up_to = -1; ///< next offset to commit (-1: nothing)
    std::int64_t committed = -1;
    std::deque<record_done> awaiting_commit; ///< only while debug-logging
    /// When a record of this partition last arrived, or its fetching was
    /// (re)started: the clock of restart_stalled_fetches.
    std::chrono::steady_clock::time_point last_fed{};
  };

  caf::event_based_actor* self = nullptr;
  context_ptr ctx;
  std::string consumer_name;
  std::unique_ptr<kafka::group_consumer> consumer;
  std::unique_ptr<persistence::repair_store> repairs;
  std::map<std::int32_t, owned_partition> owned;
  /// Partitions whose position was lost, with the offset that could not be
  /// read (-1: none committed); handled (and retried) from the poll loop.
  std::map<std::int32_t, std::int64_t> lost;
  int epoch = 0; ///< broker epoch the positions belong to (0: not read yet)
  std::chrono::steady_clock::time_point next_check{};
  /// The last housekeeping could not read the database or the broker.
  bool housekeeping_failing = false;
  std::optional<restart_policy> restarts;
  std::chrono::steady_clock::time_point last_commit{};
  bool closing = false;
  /// Graceful stop: partitions stay paused; answered once nothing is in
  /// flight and the offsets are committed.
  std::optional<caf::typed_response_promise<drain_report>> drain_reply;
  /// Set once our supervisor asked us to stop: no more polling, partition
  /// actors are stopped, and we quit with this reason after the last one.
  std::optional<caf::error> stopping;
  /// When the member subscribed, and whether report_if_unassigned still
  /// watches (until the first partition is assigned or it has warned).
  std::chrono::steady_clock::time_point subscribed_at{};
  bool watching_assignment = true;

  ~group_member_state();

  void on_assigned(const std::vector<std::int32_t>& parts);
  /// Warns once if no partition was assigned within three session timeouts
  /// of subscribing: normal for a member beyond the partition count, and
  /// otherwise a group join that is stuck, visible in a log kept at warn.
  void report_if_unassigned(std::chrono::steady_clock::time_point now);
  void on_revoked(const std::vector<std::int32_t>& parts);
  void start_worker(std::int32_t partition);
  /// Replaces the partition's worker, dropping what it held.
  void restart_worker(std::int32_t partition);
  /// Records a lost position's gap and queues what it cost again; returns
  /// where the partition resumes (its log start). Throws if the database or
  /// broker cannot be asked: the partition then stays stopped.
  std::int64_t settle_lost(std::int32_t partition, std::int64_t offset);
  /// Restarts fetching at these offsets, keeping the partitions' pauses.
  void restart_fetching(const std::map<std::int32_t, std::int64_t>& at);
  /// Adds to `restart` every owned partition that the broker holds records
  /// for beyond what it applied, but that has been fed nothing, with nothing
  /// in flight and no pause, for fetch_stall_after: its fetcher stopped
  /// without saying so. Logs and counts each one; it restarts exactly where
  /// the partition's applied records end, so nothing is fetched twice.
  void restart_stalled_fetches(std::chrono::steady_clock::time_point now,
                               std::map<std::int32_t, std::int64_t>& restart);
  /// Once a second: retries lost positions, follows broker epoch changes,
  /// restarts stalled fetches.
  void housekeeping();
  void poll_once();
  void on_done(const record_done& d);
  /// Commits every partition whose applied position moved (or just these);
  /// returns the broker's error ("" on success).
  std::string commit_done(const std::vector<std::int32_t>* only = nullptr);
  /// Stops fetching; the reply waits for the workers to finish.
  caf::typed_response_promise<drain_report> drain();
  /// Answers a pending drain once every partition is done and committed
  /// (not drained if the final commit fails).
  void finish_drain();
  /// Handles the exit of a linked partition actor; false if not ours.
  bool on_worker_exit(const caf::exit_msg& em);
  /// Stops polling and every partition actor; quits after the last one, so
  /// that our exit means none of them still runs a transaction.
  void stop(caf::error reason);
  /// While stopping: forgets the partition actor that exited, quits if it
  /// was the last.
  void on_stopped_worker(const caf::actor_addr& source);

  static inline const char* name = "group-member";
};

caf::behavior group_member(caf::stateful_actor<group_member_state>* self,
                           context_ptr ctx, std::string consumer_name);

} // namespace ef
