#pragma once

#include "messages/tree_messages.hpp"
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace ef {

/// Flow control and offsets of the partitions one consumer group member
/// owns: how many records each partition's actor holds, when to pause its
/// fetch (at consumer.max-in-flight) and resume it (at half of that), which
/// offsets are applied and which are committed. Pure bookkeeping, no I/O:
/// the group member carries out what it decides (pause, resume, commit).
class partition_flow {
public:
  using clock = std::chrono::steady_clock;
  using offsets = std::vector<std::pair<std::int32_t, std::int64_t>>;

  /// One owned partition.
  struct slot {
    int in_flight = 0;            ///< handed to its actor, not done yet
    bool paused = false;          ///< by flow control or a drain
    std::int64_t done_up_to = -1; ///< next offset to commit (-1: none)
    std::int64_t committed = -1;  ///< last committed next offset
    clock::time_point last_fed{}; ///< last record or (re)start of its fetch
    /// Parking (kafka.park-idle-ms): since when it is read to the end (and
    /// fed nothing since), where that end was, and whether it is parked.
    std::optional<clock::time_point> at_end_since;
    std::int64_t end_offset = -1;
    bool parked = false;
    /// Resumed by a recheck: parks again at its next end, without waiting.
    bool rechecking = false;
  };

  explicit partition_flow(int max_in_flight);

  /// `p` is owned from now on (assigned, or its actor was replaced: what
  /// the old one held is gone and will be fetched again), paused or not.
  void start(std::int32_t p, bool paused, clock::time_point now);
  /// `p` is no longer owned.
  void stop(std::int32_t p);
  bool owns(std::int32_t p) const { return slots_.count(p) != 0; }
  const std::map<std::int32_t, slot>& slots() const { return slots_; }
  const slot* find(std::int32_t p) const;

  /// A record of `p` was handed to its actor. True if `p` must be paused
  /// now: its actor holds consumer.max-in-flight records.
  bool fed(std::int32_t p, clock::time_point now);

  /// The actor of `p` applied (or parked) the record at `offset`. True if
  /// `p` must be resumed now: it was paused by flow control and its actor
  /// holds at most half of consumer.max-in-flight. Never during a drain.
  bool done(std::int32_t p, std::int64_t offset);

  /// A drain: every owned partition is paused (the caller pauses them all)
  /// and stays so; `done` resumes nothing while it lasts.
  void begin_drain();
  /// The drain was answered: the partitions stay paused (a drained tree
  /// idles), new ones start unpaused again.
  void end_drain() { draining_ = false; }
  bool draining() const { return draining_; }
  /// True once no record is in flight anywhere.
  bool idle() const;

  /// The partitions whose applied offsets moved past their committed ones
  /// (only those in `only`, if given), with the offsets to commit.
  offsets to_commit(const std::vector<std::int32_t>* only = nullptr) const;
  /// The broker took these commits.
  void committed(const offsets& done);

  /// The next offset to read of `p` as far as this member knows: past what
  /// its actor applied, else its committed offset (-1: neither).
  std::int64_t next_offset(std::int32_t p) const;

  /// Owned partitions that may have stopped fetching silently: not paused,
  /// nothing in flight, fed nothing since `after` ago. Each is looked at
  /// once per period (its clock restarts here).
  std::vector<std::int32_t> unfed_since(clock::duration after,
                                        clock::time_point now);

  /// The fetch of these partitions was (re)started now.
  void refetched(std::int32_t p, clock::time_point now);

  // Parking: a partition read to its end that stays idle stops fetching
  // (no empty fetch every kafka.fetch-wait-max-ms) until a relay announces
  // a record there, or a recheck. Parked counts as paused for everything
  // else (flow control, the watchdog, restarts keep it paused).

  /// The client read `p` to `next_offset`, the end of its log.
  void at_end(std::int32_t p, std::int64_t next_offset, clock::time_point now);
  /// The partitions to pause now: at their end for `idle` (at once after a
  /// recheck), unpaused, and with no announced record past that end.
  std::vector<std::int32_t> to_park(clock::duration idle,
                                    clock::time_point now);
  /// A relay announced a record at `offset` of `p`. True if `p` must be
  /// resumed now (it was parked).
  bool announced(std::int32_t p, std::int64_t offset, clock::time_point now);
  /// Every `every`, all parked partitions are resumed once (records no
  /// relay announced); returns them. `now` starts the first period.
  std::vector<std::int32_t> to_recheck(clock::duration every,
                                       clock::time_point now);
  /// Unparks all (to be resumed by the caller): announcements may have
  /// been missed.
  std::vector<std::int32_t> unpark_all(clock::time_point now);
  std::size_t parked() const;
  /// True while an actor holds a record or an applied offset waits for its
  /// commit: record_done messages or a commit are due soon.
  bool busy() const;

private:
  /// A parked partition fetches again from `now`: the watchdog counts from
  /// here, not from its last record (which may be long ago).
  static void unpark(slot& s, clock::time_point now);

  int max_in_flight_;
  bool draining_ = false;
  std::map<std::int32_t, slot> slots_;
  /// The highest announced offset + 1 per partition, owned or not.
  std::map<std::int32_t, std::int64_t> announced_end_;
  std::optional<clock::time_point> last_recheck_;
};

} // namespace ef
