// The recovery journal never blocks an actor and never grows without bound:
// while the database is unreachable its lines wait in a bounded queue, and
// what falls out of it is counted for /metrics.

#include "persistence/recovery_journal.hpp"

#include <catch2/catch.hpp>

#include <thread>

#include <atomic>

TEST_CASE("a_journal_that_cannot_reach_its_database_drops_past_its_bound_and_"
          "reports_every_dropped_line") {
  std::atomic<std::uint64_t> reported{0};
  {
    // Nothing listens on port 1: every connection attempt fails at once.
    ef::persistence::recovery_journal journal(
      "host=127.0.0.1 port=1 connect_timeout=1", 3);
    journal.on_drop([&](std::uint64_t n) { reported += n; });
    for (int i = 0; i < 10; ++i) {
      ef::persistence::journal_line line;
      line.what = ef::persistence::journal_line::kind::restart;
      line.actor = "test " + std::to_string(i);
      journal.record(std::move(line));
    }
    // The writer may hold up to one batch in hand; the queue holds 3 more.
    CHECK(journal.dropped() >= 10 - 3 - 3);
    // The writer reports a drop after counting it, outside its lock: wait
    // (boundedly) until the report caught up with the count.
    for (int i = 0; i < 1000 && reported != journal.dropped(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(reported == journal.dropped());
    CHECK_FALSE(journal.flush(std::chrono::milliseconds(100)));
  }
}
