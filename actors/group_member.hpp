#pragma once

#include "actors/announcements.hpp"
#include "actors/assignment_watch.hpp"
#include "actors/context.hpp"
#include "actors/member_control.hpp"
#include "actors/offset_commits.hpp"
#include "actors/partition_flow.hpp"
#include "actors/partition_repairs.hpp"
#include "actors/partition_workers.hpp"
#include "kafka/group_client.hpp"
#include "messages/tree_messages.hpp"
#include <eventforge/messages/control_messages.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace ef {

/// What a group member is built from. Production: a librdkafka client, real
/// partition actors and the database's gap ledger
/// (production_group_member_deps); deterministic actor tests give fakes.
struct group_member_deps {
  std::function<std::unique_ptr<kafka::group_client>(
    kafka::group_client::callbacks)>
    client;
  /// Spawns the actor of `partition`, linked to `member`.
  std::function<caf::actor(caf::event_based_actor* member,
                           std::int32_t partition)>
    worker;
  std::function<std::unique_ptr<gap_ledger>()> ledger;
  /// The process's LISTEN session, for the relays' announcements that let
  /// idle partitions park (kafka.park-idle-ms); unset: they never park.
  /// Throws db_error when the database is out of reach.
  std::function<std::shared_ptr<persistence::announcement_source>()> listener;
  /// Its heartbeat and its consumer's pause (unset: never paused).
  member_control control;
};

group_member_deps production_group_member_deps(const context_ptr& ctx,
                                               const std::string& consumer);

/// One consumer's member of its Kafka consumer group, and the supervisor of
/// its partition actors. It owns the client, follows rebalances (one
/// partition actor per owned partition), hands each record to its
/// partition's actor, and commits "offset + 1" only after that actor
/// reports the record's transaction done. Its jobs live apart:
/// partition_flow (pause at consumer.max-in-flight, resume at half, what to
/// commit), restart_rules (a crashed partition actor is restarted like any
/// supervised child, then its partition is rewound to the committed
/// offset: exactly how redelivery happens), gap repair (a position the
/// broker lost is recorded and repaired, never skipped; a new broker epoch
/// rereads everything) and the fetch watchdog (a last resort).
struct group_member_state {
  caf::event_based_actor* self = nullptr;
  context_ptr ctx;
  std::string consumer_name;
  group_member_deps deps;
  std::unique_ptr<kafka::group_client> consumer;
  std::optional<partition_flow> flow;
  std::optional<partition_repairs> repairs;
  std::optional<partition_workers> workers;
  std::optional<offset_commits> commits;
  std::optional<assignment_watch> assignments;
  /// Parking idle partitions: the relays' announcements come in here, from
  /// the listener (held while it is healthy).
  std::shared_ptr<announcements> heard;
  std::shared_ptr<persistence::announcement_source> listener;
  /// The parked count the gauge shows: set when it changes, not per poll.
  std::optional<std::size_t> parked_shown;
  caf::actor_clock::time_point next_check{};
  /// A lost position pulled next_check forward: polls end by then.
  bool settle_soon = false;
  caf::actor_clock::time_point last_commit{};
  bool closing = false;
  /// Graceful stop: answered once nothing is in flight and the offsets are
  /// committed.
  std::optional<caf::typed_response_promise<drain_report>> drain_reply;
  /// Set once our supervisor asked us to stop: no more polling, partition
  /// actors are stopped, and we quit with this reason after the last one.
  std::optional<caf::error> stopping;
  /// The operator's control (group_member_control.cpp): this member's id
  /// in consumer_members, and whether it is pausing (a drain that ends in
  /// leaving the group).
  member_control control;
  std::string member_id;
  bool pausing = false;
  /// Whether the control answered at the last heartbeat (logged once per
  /// change, not once a second).
  bool control_known = true;

  ~group_member_state();

  void on_assigned(const std::vector<std::int32_t>& parts);
  /// A partition gets a new actor (assigned, or its log is gone: the old
  /// one is stopped first) and starts afresh in flow control.
  void begin_partition(std::int32_t p, bool replace);
  void on_revoked(const std::vector<std::int32_t>& parts);
  /// Once a second: partition_repairs (lost positions, epochs, stalls) and
  /// the listener parking needs.
  void housekeeping();
  /// After every poll: resumes announced partitions, parks idle ones,
  /// rechecks parked ones.
  void settle_parking(caf::actor_clock::time_point at);
  /// Subscribes to a (new) listener when there is none or it broke.
  void keep_listening();
  /// How long the next poll may block.
  int poll_timeout_ms(caf::actor_clock::time_point at) const;
  void poll_once();
  void on_done(const record_done& d);
  /// Commits every partition whose applied position moved (or just these);
  /// returns the broker's error ("" on success).
  caf::error commit_done(const std::vector<std::int32_t>* only = nullptr);
  caf::typed_response_promise<drain_report> drain();
  /// A drain (or a pause) ends once nothing is in flight: commits, answers
  /// the drain, or leaves the group for a pause.
  void finish_drain();
  /// Reports this member (consuming or paused, its partitions) and returns
  /// whether its consumer is paused. A control that does not answer (the
  /// database away) leaves the member as it is.
  bool report_to_control(bool paused_member);
  /// The operator paused the consumer: every partition is paused, what is
  /// in flight is applied and committed, then the member leaves the group.
  void begin_pause();
  /// Forgets this member's heartbeat row (best effort).
  void leave_members();
  /// A linked partition actor exited; false if it is not ours.
  bool on_worker_exit(const caf::exit_msg& em);
  /// The backoff after a partition actor's crash has passed: a new actor,
  /// and the partition rewound to its committed offset.
  void restart_worker(std::int32_t p);
  void stop(caf::error reason);

  /// The actor clock's time: the steady clock in production, the test
  /// coordinator's in deterministic tests. Every timed path of the member
  /// (commits, housekeeping, parking, stalls, restarts) reads this.
  caf::actor_clock::time_point now() const { return self->clock().now(); }

  static inline const char* name = "group-member";
};

/// The production group member of `consumer_name`.
caf::behavior group_member(caf::stateful_actor<group_member_state>* self,
                           context_ptr ctx, std::string consumer_name);

/// A member of a paused consumer: no client, no partitions; it reports
/// itself paused once a second and makes way for a consuming member once
/// the consumer is resumed.
caf::behavior paused_member(caf::stateful_actor<group_member_state>* self);

/// The same actor, built from `deps`.
caf::behavior group_member_with(caf::stateful_actor<group_member_state>* self,
                                context_ptr ctx, std::string consumer_name,
                                group_member_deps deps);

} // namespace ef
