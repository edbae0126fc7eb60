#pragma once

#include <eventforge/actors/telemetry.hpp>

#include <optional>

namespace ef::app {

/// What one stage of the pipeline did between two readings of its
/// histogram: observations per second and their latency quantiles
/// (interpolated within a bucket as Prometheus' histogram_quantile does).
/// The bucket a quantile falls in: all a histogram knows of it. The
/// interpolated value inside it is a guess, not a measurement.
struct bucket_range {
  double lower = 0; ///< the bucket's lower bound (exclusive)
  double upper = 0; ///< its upper bound (inclusive; +Inf past the last)
};

struct stage_figures {
  double per_second = 0;
  std::optional<double> p50_ms, p99_ms; ///< empty: no observation
  /// The buckets they fall in, in ms: what the page shows ("≤ 20 s").
  std::optional<bucket_range> p50_bucket_ms, p99_bucket_ms;
};

stage_figures between(const telemetry::histogram_state& before,
                      const telemetry::histogram_state& now, double seconds);

/// The q-quantile (0..1) of the observations counted in cumulative
/// `buckets`, in the buckets' unit; empty if there are none. An answer in
/// the +Inf bucket is the highest finite bound.
std::optional<double>
quantile(double q,
         const std::vector<std::pair<double, std::uint64_t>>& buckets);

/// The bucket of cumulative `buckets` the q-quantile falls in; empty if
/// there are no observations.
std::optional<bucket_range>
quantile_bucket(double q,
                const std::vector<std::pair<double, std::uint64_t>>& buckets);

} // namespace ef::app
