#pragma once

#include <eventforge/actors/telemetry.hpp>

#include <optional>

namespace ef::app {

/// What one stage of the pipeline did between two readings of its
/// histogram: observations per second and their latency quantiles
/// (interpolated within a bucket as Prometheus' histogram_quantile does).
struct stage_figures {
  double per_second = 0;
  std::optional<double> p50_ms, p99_ms; ///< empty: no observation
};

stage_figures between(const telemetry::histogram_state& before,
                      const telemetry::histogram_state& now, double seconds);

/// The q-quantile (0..1) of the observations counted in cumulative
/// `buckets`, in the buckets' unit; empty if there are none. An answer in
/// the +Inf bucket is the highest finite bound.
std::optional<double>
quantile(double q,
         const std::vector<std::pair<double, std::uint64_t>>& buckets);

} // namespace ef::app
