#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ef {

/// Process-wide counters, written by actors, read by operators and the
/// chaos report. Keys are Prometheus-style series names, e.g.
/// `actor_restarts_total{kind="relay",reason="injected"}`. Label values are
/// bounded (kind, consumer, point, shard…); order and event IDs never appear.
class telemetry {
public:
  using labels = std::vector<std::pair<std::string, std::string>>;

  /// Adds `n` to the counter `name{labels}`.
  void add(const std::string& name, const labels& l = {}, std::uint64_t n = 1);

  /// All counters, by series key.
  std::map<std::string, std::uint64_t> snapshot() const;

  /// Sum of every series of `name` whose labels include all of `match`.
  std::uint64_t sum(const std::string& name, const labels& match = {}) const;

  /// Renders a series key: name{k1="v1",k2="v2"}.
  static std::string key(const std::string& name, const labels& l);

private:
  mutable std::mutex mtx_;
  std::map<std::string, std::uint64_t> counters_;
};

} // namespace ef
