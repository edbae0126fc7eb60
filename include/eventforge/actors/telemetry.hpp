#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// A host that exports metrics of its own hands its registry over; nothing
// else of prometheus-cpp is in this header (it is linked privately).
namespace prometheus {
class Registry;
} // namespace prometheus

namespace ef {

/// Process-wide metrics, written by actors and the HTTP front end, read by
/// /metrics, `eventforge status` and the chaos report. Series keys are
/// Prometheus-style, e.g.
/// `actor_restarts_total{kind="relay",reason="injected"}`. Label values are
/// bounded (kind, consumer, point, shard, partition, route, status class);
/// order and event IDs never appear.
///
/// The series live in a prometheus-cpp registry: EventForge's metric
/// families are registered in it once, and /metrics is its text
/// exposition. A host that exports metrics of its own passes its registry,
/// so one scrape (its exposer or EventForge's /metrics) serves both.
class telemetry {
public:
  using labels = std::vector<std::pair<std::string, std::string>>;

  /// Registers every metric family of the catalog in `registry` (a new
  /// registry if null). Throws std::invalid_argument if the registry holds
  /// one of EventForge's metric names with another type already.
  explicit telemetry(std::shared_ptr<prometheus::Registry> registry = nullptr);
  ~telemetry();
  telemetry(const telemetry&) = delete;
  telemetry& operator=(const telemetry&) = delete;

  /// The registry the series live in.
  const std::shared_ptr<prometheus::Registry>& registry() const {
    return registry_;
  }

  /// Adds `n` to the counter `name{labels}`.
  void add(const std::string& name, const labels& l = {}, std::uint64_t n = 1);

  /// Makes the counter or histogram series `name{labels}` exist with 0 (no
  /// observation) if it does not, so rate() and alerts work before the
  /// first event.
  void declare(const std::string& name, const labels& l = {});

  /// Sets the gauge `name{labels}`.
  void set(const std::string& name, const labels& l, double value);

  /// Removes the gauge series `name{labels}` (labels in the order set()
  /// was given them): a value that is no longer known is absent from
  /// /metrics rather than frozen at its last sample.
  void unset(const std::string& name, const labels& l);

  /// Records one observation in the histogram `name{labels}`.
  void observe(const std::string& name, const labels& l, double value);

  /// All counters, by series key.
  std::map<std::string, std::uint64_t> snapshot() const;

  /// Every gauge series of `name` with a value above zero, by series key.
  std::map<std::string, double> positive_gauges(const std::string& name) const;

  /// Sum of every counter series of `name` whose labels include `match`.
  std::uint64_t sum(const std::string& name, const labels& match = {}) const;

  /// A histogram as it stands: observations, their sum, and the cumulative
  /// count at each upper bound (the last bound is +Inf).
  struct histogram_state {
    std::uint64_t count = 0;
    double sum = 0;
    std::vector<std::pair<double, std::uint64_t>> buckets;
  };

  /// Every series of histogram `name` whose labels include `match`, added
  /// up (they share the catalog's bounds).
  histogram_state histogram_total(const std::string& name,
                                  const labels& match = {}) const;

  /// The Prometheus text exposition (version 0.0.4) of every metric in the
  /// registry (a host's own included), with HELP and TYPE lines, and the
  /// process_* families (actors/process_metrics.hpp) unless the registry
  /// has them.
  std::string render_prometheus() const;

  /// Renders a series key: name{k1="v1",k2="v2"}.
  static std::string key(const std::string& name, const labels& l);

private:
  /// The registered families and the series made so far, by key (kept
  /// in actors/telemetry.cpp, with prometheus-cpp's types).
  struct series;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<series> series_;
};

} // namespace ef
