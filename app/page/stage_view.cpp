#include "app/page/stage_view.hpp"

#include <cmath>

namespace ef::app {

std::optional<double>
quantile(double q,
         const std::vector<std::pair<double, std::uint64_t>>& buckets) {
  if (buckets.empty() || buckets.back().second == 0)
    return std::nullopt;
  auto total = static_cast<double>(buckets.back().second);
  auto rank = q * total;
  double lower = 0;
  std::uint64_t below = 0;
  for (auto& [upper, cumulative] : buckets) {
    if (static_cast<double>(cumulative) >= rank && cumulative > below) {
      if (std::isinf(upper))
        return lower; // beyond the last finite bound: that bound
      auto in_bucket = static_cast<double>(cumulative - below);
      return lower +
             (upper - lower) * (rank - static_cast<double>(below)) / in_bucket;
    }
    if (!std::isinf(upper))
      lower = upper;
    below = cumulative;
  }
  return lower;
}

std::optional<bucket_range>
quantile_bucket(double q,
                const std::vector<std::pair<double, std::uint64_t>>& buckets) {
  if (buckets.empty() || buckets.back().second == 0)
    return std::nullopt;
  auto rank = q * static_cast<double>(buckets.back().second);
  double lower = 0;
  std::uint64_t below = 0;
  for (auto& [upper, cumulative] : buckets) {
    if (static_cast<double>(cumulative) >= rank && cumulative > below)
      return bucket_range{lower, upper};
    if (!std::isinf(upper))
      lower = upper;
    below = cumulative;
  }
  return bucket_range{lower, buckets.back().first};
}

stage_figures between(const telemetry::histogram_state& before,
                      const telemetry::histogram_state& now, double seconds) {
  stage_figures f;
  auto n = now.count >= before.count ? now.count - before.count : now.count;
  f.per_second = seconds > 0 ? static_cast<double>(n) / seconds : 0;
  auto delta = now.buckets;
  if (before.buckets.size() == delta.size() && now.count >= before.count)
    for (size_t i = 0; i < delta.size(); ++i)
      delta[i].second -= before.buckets[i].second;
  if (auto p = quantile(0.5, delta))
    f.p50_ms = *p * 1000;
  if (auto p = quantile(0.99, delta))
    f.p99_ms = *p * 1000;
  auto in_ms = [](bucket_range b) {
    return bucket_range{b.lower * 1000, b.upper * 1000};
  };
  if (auto b = quantile_bucket(0.5, delta))
    f.p50_bucket_ms = in_ms(*b);
  if (auto b = quantile_bucket(0.99, delta))
    f.p99_bucket_ms = in_ms(*b);
  return f;
}

} // namespace ef::app
