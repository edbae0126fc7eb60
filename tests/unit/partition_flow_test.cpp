// Flow control of a group member's partitions (actors/partition_flow.hpp):
// pause at consumer.max-in-flight, resume at half of it, commit what was
// applied, and find fetches that went quiet.

#include "actors/partition_flow.hpp"
#include "messages/tree_messages.hpp"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using ef::partition_flow;

TEST_CASE("a_partition_pauses_when_its_actor_holds_max_in_flight_and_resumes_"
          "exactly_at_half") {
  partition_flow f(4);
  auto t = partition_flow::clock::now();
  f.start(0, false, t);
  CHECK_FALSE(f.fed(0, t));
  CHECK_FALSE(f.fed(0, t));
  CHECK_FALSE(f.fed(0, t));
  CHECK(f.fed(0, t)); // the 4th: pause now
  CHECK(f.find(0)->paused);
  CHECK_FALSE(f.fed(0, t)); // already paused: records in flight still count
  CHECK(f.find(0)->in_flight == 5);
  // 5 -> 4 -> 3: still above half.
  CHECK_FALSE(f.done(0, 10));
  CHECK_FALSE(f.done(0, 11));
  // 3 -> 2 = max / 2: resume now, not one record later.
  CHECK(f.done(0, 12));
  CHECK_FALSE(f.find(0)->paused);
  CHECK_FALSE(f.done(0, 13)); // not paused: nothing to resume
}

TEST_CASE("applied_offsets_are_committed_once_and_only_for_the_asked_"
          "partitions") {
  partition_flow f(100);
  auto t = partition_flow::clock::now();
  f.start(0, false, t);
  f.start(1, false, t);
  f.fed(0, t);
  f.fed(1, t);
  f.done(0, 7);
  f.done(1, 3);
  CHECK(f.to_commit() == partition_flow::offsets{{0, 8}, {1, 4}});
  std::vector<std::int32_t> only{1};
  CHECK(f.to_commit(&only) == partition_flow::offsets{{1, 4}});
  f.committed({{0, 8}});
  CHECK(f.to_commit() == partition_flow::offsets{{1, 4}});
  CHECK(f.next_offset(0) == 8);
  // An out-of-order report never moves the position back.
  f.fed(0, t);
  f.done(0, 2);
  CHECK(f.next_offset(0) == 8);
}

TEST_CASE("a_member_is_busy_while_a_record_is_in_flight_or_an_applied_"
          "offset_waits_for_its_commit") {
  // What keeps a group member's poll short (20 ms, not 250).
  partition_flow f(100);
  auto t = partition_flow::clock::now();
  f.start(0, false, t);
  CHECK_FALSE(f.busy()); // owned, nothing handed out
  f.fed(0, t);
  CHECK(f.busy()); // its record_done is due
  f.done(0, 5);
  CHECK(f.busy()); // applied, not committed
  f.committed(f.to_commit());
  CHECK_FALSE(f.busy());
}

TEST_CASE("a_drain_pauses_everything_and_resumes_nothing") {
  partition_flow f(2);
  auto t = partition_flow::clock::now();
  f.start(0, false, t);
  f.fed(0, t);
  f.fed(0, t); // paused by flow control
  f.begin_drain();
  CHECK_FALSE(f.idle());
  CHECK_FALSE(f.done(0, 0));
  CHECK_FALSE(f.done(0, 1));
  CHECK(f.idle());
  CHECK(f.find(0)->paused);
  // A partition assigned during the drain starts paused too.
  f.start(1, false, t);
  CHECK(f.find(1)->paused);
  f.end_drain();
  f.start(2, false, t);
  CHECK_FALSE(f.find(2)->paused);
}

TEST_CASE("a_partition_unfed_for_a_period_with_nothing_in_flight_is_looked_at_"
          "once_per_period") {
  partition_flow f(10);
  auto t = partition_flow::clock::now();
  f.start(0, false, t); // idle
  f.start(1, false, t); // busy: something in flight
  f.start(2, true, t);  // paused on purpose
  f.fed(1, t);
  CHECK(f.unfed_since(10s, t + 9s).empty());
  CHECK(f.unfed_since(10s, t + 10s) == std::vector<std::int32_t>{0});
  // Its clock restarted: not again before another period.
  CHECK(f.unfed_since(10s, t + 15s).empty());
  CHECK(f.unfed_since(10s, t + 20s) == std::vector<std::int32_t>{0});
  f.begin_drain();
  CHECK(f.unfed_since(10s, t + 60s).empty());
}

TEST_CASE("a_partition_idle_at_its_end_parks_after_the_idle_time_and_an_"
          "announcement_resumes_it") {
  partition_flow f(10);
  auto t = partition_flow::clock::now();
  f.start(0, false, t);
  f.start(1, false, t);
  f.at_end(0, 7, t);
  f.at_end(1, 3, t);
  CHECK(f.to_park(1s, t + 999ms).empty()); // not idle long enough
  f.fed(1, t + 500ms);                     // fed: no longer at its end
  f.done(1, 3);
  auto parked = f.to_park(1s, t + 1s);
  REQUIRE(parked == std::vector<std::int32_t>{0});
  CHECK(f.find(0)->parked);
  CHECK(f.parked() == 1);
  CHECK(f.to_park(1s, t + 5s).empty()); // asked once
  // Parked counts as paused: the watchdog leaves it alone.
  CHECK(f.unfed_since(1s, t + 60s) == std::vector<std::int32_t>{1});
  // An announcement for another partition, or an owned one not parked,
  // resumes nothing.
  CHECK_FALSE(f.announced(5, 0, t + 60s));
  CHECK_FALSE(f.announced(1, 3, t + 60s));
  // The record at offset 7 of partition 0: resume it.
  CHECK(f.announced(0, 7, t + 61s));
  CHECK_FALSE(f.find(0)->parked);
  CHECK_FALSE(f.announced(0, 8, t + 61s)); // resumed already
  // Its fetch starts now: the watchdog counts from the resume, not from
  // its last record a minute ago.
  // (partition 1, fetching and fed nothing since t + 60s, is reported.)
  CHECK(f.unfed_since(1s, t + 61s + 500ms) == std::vector<std::int32_t>{1});
  CHECK(f.unfed_since(1s, t + 62s) == std::vector<std::int32_t>{0});
}

TEST_CASE("a_partition_with_an_announced_record_past_its_end_does_not_park") {
  partition_flow f(10);
  auto t = partition_flow::clock::now();
  f.start(0, false, t);
  // The announcement overtook the fetch: the end the client saw (5) is
  // older than the record announced at 5.
  CHECK_FALSE(f.announced(0, 5, t));
  f.at_end(0, 5, t);
  CHECK(f.to_park(1s, t + 2s).empty());
  // Once it read past that record and reached the end again, it parks.
  f.fed(0, t + 2s);
  f.at_end(0, 6, t + 2s);
  CHECK(f.to_park(1s, t + 3s) == std::vector<std::int32_t>{0});
}

TEST_CASE("parked_partitions_are_rechecked_once_per_period_and_park_again_at_"
          "once_when_nothing_came") {
  partition_flow f(10);
  auto t = partition_flow::clock::now();
  f.start(0, false, t);
  f.start(1, false, t);
  CHECK(f.to_recheck(10s, t).empty()); // starts the first period
  f.at_end(0, 1, t);
  f.at_end(1, 1, t);
  CHECK(f.to_park(1s, t + 1s).size() == 2);
  CHECK(f.to_recheck(10s, t + 9s).empty());
  CHECK(f.to_recheck(10s, t + 10s) == std::vector<std::int32_t>{0, 1});
  CHECK(f.parked() == 0);
  // Partition 0 ends where it was: parks without the idle wait. Partition 1
  // got a record: back to the idle wait.
  f.at_end(0, 1, t + 10s);
  f.fed(1, t + 10s);
  f.at_end(1, 2, t + 10s);
  CHECK(f.to_park(1s, t + 10s) == std::vector<std::int32_t>{0});
  CHECK(f.to_park(1s, t + 11s) == std::vector<std::int32_t>{1});
}

TEST_CASE("paused_and_draining_partitions_never_park_and_a_drain_unparks") {
  partition_flow f(1);
  auto t = partition_flow::clock::now();
  f.start(0, false, t);
  f.start(1, false, t);
  CHECK(f.fed(0, t)); // flow control pauses it
  f.at_end(0, 1, t);  // an end reported before the pause took effect
  f.at_end(1, 1, t);
  CHECK(f.to_park(1s, t + 1s) == std::vector<std::int32_t>{1});
  f.begin_drain();
  CHECK(f.parked() == 0); // paused by the drain now, not parked
  f.at_end(1, 1, t + 2s);
  CHECK(f.to_park(1s, t + 5s).empty());
  CHECK(f.unpark_all(t + 5s).empty());
}
