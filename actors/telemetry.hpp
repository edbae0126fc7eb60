#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ef {

/// Process-wide metrics, written by actors and the HTTP front end, read by
/// /metrics, `eventforge status` and the chaos report. Series keys are
/// Prometheus-style, e.g.
/// `actor_restarts_total{kind="relay",reason="injected"}`. Label values are
/// bounded (kind, consumer, point, shard, partition, route, status class);
/// order and event IDs never appear.
class telemetry {
public:
  using labels = std::vector<std::pair<std::string, std::string>>;

  /// Adds `n` to the counter `name{labels}`.
  void add(const std::string& name, const labels& l = {}, std::uint64_t n = 1);

  /// Makes the counter series `name{labels}` exist with 0 if it does not,
  /// so rate() and alerts work before the first event.
  void declare(const std::string& name, const labels& l = {});

  /// Sets the gauge `name{labels}`.
  void set(const std::string& name, const labels& l, double value);

  /// Records one observation in the histogram `name{labels}`.
  void observe(const std::string& name, const labels& l, double value);

  /// All counters, by series key.
  std::map<std::string, std::uint64_t> snapshot() const;

  /// Every gauge series of `name` with a value above zero, by series key.
  std::map<std::string, double> positive_gauges(const std::string& name) const;

  /// Sum of every counter series of `name` whose labels include `match`.
  std::uint64_t sum(const std::string& name, const labels& match = {}) const;

  /// The Prometheus text exposition (version 0.0.4) of every metric, with
  /// HELP and TYPE lines from the catalog.
  std::string render_prometheus() const;

  /// Renders a series key: name{k1="v1",k2="v2"}.
  static std::string key(const std::string& name, const labels& l);

private:
  struct histogram {
    std::vector<std::uint64_t> buckets; // cumulative counts per bound
    double sum = 0;
    std::uint64_t count = 0;
  };
  mutable std::mutex mtx_;
  std::map<std::string, std::uint64_t> counters_;
  std::map<std::string, double> gauges_;
  std::map<std::string, histogram> histograms_;
};

} // namespace ef
