// The page's live stage figures: rates and quantiles between two readings
// of a histogram, interpolated as Prometheus' histogram_quantile does.

#include "actors/gauges.hpp"
#include "app/page/stage_view.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace ef;

namespace {

const double inf = std::numeric_limits<double>::infinity();

telemetry::histogram_state state(std::uint64_t a, std::uint64_t b,
                                 std::uint64_t c) {
  // Bounds 1 ms, 10 ms, +Inf; cumulative counts.
  return {c, 0, {{0.001, a}, {0.010, b}, {inf, c}}};
}

} // namespace

TEST_CASE("stage_figures_count_only_what_happened_between_two_readings") {
  auto before = state(10, 10, 10); // 10 fast observations, long ago
  auto now = state(10, 30, 30);    // then 20 between 1 and 10 ms
  auto f = app::between(before, now, 10);
  CHECK(f.per_second == Approx(2.0));
  // Half of the 20 new ones: the middle of the 1..10 ms bucket.
  REQUIRE(f.p50_ms);
  CHECK(*f.p50_ms == Approx(5.5));
  REQUIRE(f.p99_ms);
  CHECK(*f.p99_ms == Approx(1 + 9 * 0.99));
}

TEST_CASE("stage_figures_without_observations_have_no_latency_and_past_the_"
          "last_bound_report_that_bound") {
  auto idle = app::between(state(5, 5, 5), state(5, 5, 5), 30);
  CHECK(idle.per_second == 0);
  CHECK_FALSE(idle.p50_ms);
  auto slow = app::between(state(0, 0, 0), state(0, 0, 4), 1);
  REQUIRE(slow.p99_ms);
  CHECK(*slow.p99_ms == Approx(10));
}

TEST_CASE("lag_counts_from_the_log_start_without_a_commit_and_is_never_"
          "negative") {
  // Partition 1 has no commit yet; partition 2's log was replaced and now
  // ends before the old commit.
  auto lag = lag_of({10, 5, 3}, {4, -1, 7});
  REQUIRE(lag.size() == 3);
  CHECK(lag[0].lag == 6);
  CHECK(lag[1].lag == 5);
  CHECK(lag[1].committed == -1);
  CHECK(lag[2].lag == 0);
}

TEST_CASE("stage_quantiles_name_the_bucket_they_fall_in_not_an_exact_value") {
  // 20 observations between 1 and 10 ms: the median is known to be in
  // (1, 10] ms, nothing finer.
  auto f = app::between(state(0, 0, 0), state(0, 20, 20), 1);
  REQUIRE(f.p50_bucket_ms);
  CHECK(f.p50_bucket_ms->lower == Approx(1));
  CHECK(f.p50_bucket_ms->upper == Approx(10));
  // Past the last finite bound: above 10 ms, no upper bound.
  auto slow = app::between(state(0, 0, 0), state(0, 0, 4), 1);
  REQUIRE(slow.p99_bucket_ms);
  CHECK(slow.p99_bucket_ms->lower == Approx(10));
  CHECK(std::isinf(slow.p99_bucket_ms->upper));
  CHECK_FALSE(app::between(state(5, 5, 5), state(5, 5, 5), 1).p50_bucket_ms);
}
