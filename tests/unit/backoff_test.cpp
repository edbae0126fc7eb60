// The one backoff rule (config/backoff.hpp) every retrying actor uses.

#include "config/backoff.hpp"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using ef::config::backoff;
using ef::config::backoff_policy;

TEST_CASE("backoff_doubles_from_its_base_up_to_its_cap") {
  backoff b({50ms, 400ms, 0.0, 1000ms});
  auto t = backoff::clock::now();
  b.began(t);
  std::vector<long long> waits;
  for (int i = 0; i < 6; ++i)
    waits.push_back(b.failed(t).count());
  CHECK(waits == std::vector<long long>{50, 100, 200, 400, 400, 400});
  CHECK(b.failures_in_a_row() == 6);
}

TEST_CASE("a_success_or_a_healthy_spell_starts_a_new_run_of_failures") {
  backoff b({10ms, 10s, 0.0, 1000ms});
  auto t = backoff::clock::now();
  b.began(t);
  CHECK(b.failed(t) == 10ms);
  CHECK(b.failed(t) == 20ms);
  b.succeeded();
  CHECK(b.failed(t) == 10ms);
  // Restarted, then up for a second: its next crash is a first one again;
  // up for less, it climbs.
  b.began(t);
  CHECK(b.failed(t + 999ms) == 20ms);
  b.began(t + 1s);
  CHECK(b.failed(t + 2s) == 10ms);
}

TEST_CASE("jitter_randomizes_only_its_share_of_the_delay_and_is_repeatable_"
          "with_a_seed") {
  backoff_policy p{100ms, 100ms, 0.5, 1000ms};
  backoff a(p, 7), b(p, 7), c(p, 8);
  bool differs = false;
  for (int i = 0; i < 50; ++i) {
    auto x = a.failed();
    CHECK(x >= 50ms);
    CHECK(x <= 100ms);
    CHECK(b.failed() == x);
    differs = differs || c.failed() != x;
  }
  CHECK(differs);
}

TEST_CASE("a_zero_base_never_waits_and_a_cap_below_the_base_is_the_base") {
  backoff zero({0ms, 5s, 0.5, 1s});
  CHECK(zero.failed() == 0ms);
  CHECK(zero.failed() == 0ms);
  backoff odd({300ms, 100ms, 0.0, 1s});
  CHECK(odd.failed() == 300ms);
  CHECK(odd.failed() == 300ms);
}
