#pragma once

#include "actors/context.hpp"
#include "actors/partition_worker.hpp"
#include "actors/restart_policy.hpp"
#include "kafka/group_consumer.hpp"

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
struct group_member_state {
  struct owned_partition {
    caf::actor worker;
    int in_flight = 0;
    bool paused = false;
    std::int64_t done_up_to = -1; ///< next offset to commit (-1: nothing)
    std::int64_t committed = -1;
    std::deque<record_done> awaiting_commit; ///< only while debug-logging
  };

  caf::event_based_actor* self = nullptr;
  context_ptr ctx;
  std::string consumer_name;
  std::unique_ptr<kafka::group_consumer> consumer;
  std::map<std::int32_t, owned_partition> owned;
  std::optional<restart_policy> restarts;
  std::chrono::steady_clock::time_point last_commit{};
  bool closing = false;

  ~group_member_state();

  void on_assigned(const std::vector<std::int32_t>& parts);
  void on_revoked(const std::vector<std::int32_t>& parts);
  void start_worker(std::int32_t partition);
  void poll_once();
  void on_done(const record_done& d);
  /// Commits every partition whose applied position moved (or just these).
  void commit_done(const std::vector<std::int32_t>* only = nullptr);
  /// Handles the exit of a linked partition actor; false if not ours.
  bool on_worker_exit(const caf::exit_msg& em);

  static inline const char* name = "group-member";
};

caf::behavior group_member(caf::stateful_actor<group_member_state>* self,
                           context_ptr ctx, std::string consumer_name);

} // namespace ef
