#include "actors/restart_policy.hpp"

#include <catch2/catch.hpp>

TEST_CASE("restart_policy_escalates_past_the_intensity_and_forgets_old_ones") {
  ef::restart_policy p(3, std::chrono::seconds(10));
  auto t0 = ef::restart_policy::clock::now();
  CHECK(p.allow(t0));
  CHECK(p.allow(t0 + std::chrono::seconds(1)));
  CHECK(p.allow(t0 + std::chrono::seconds(2)));
  CHECK_FALSE(p.allow(t0 + std::chrono::seconds(3)));
  // Eleven seconds later the early restarts fell out of the window.
  CHECK(p.allow(t0 + std::chrono::seconds(14)));
}
