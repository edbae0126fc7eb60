#include "actors/telemetry.hpp"

namespace ef {

std::string telemetry::key(const std::string& name, const labels& l) {
  if (l.empty())
    return name;
  std::string out = name + "{";
  for (size_t i = 0; i < l.size(); ++i)
    out += (i ? "," : "") + l[i].first + "=\"" + l[i].second + "\"";
  return out + "}";
}

void telemetry::add(const std::string& name, const labels& l, std::uint64_t n) {
  auto k = key(name, l);
  std::lock_guard<std::mutex> guard{mtx_};
  counters_[k] += n;
}

std::map<std::string, std::uint64_t> telemetry::snapshot() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return counters_;
}

std::uint64_t telemetry::sum(const std::string& name,
                             const labels& match) const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::uint64_t total = 0;
  for (auto& [k, v] : counters_) {
    if (k.compare(0, name.size(), name) != 0 ||
        (k.size() > name.size() && k[name.size()] != '{'))
      continue;
    bool all = true;
    for (auto& [lk, lv] : match)
      all = all && k.find(lk + "=\"" + lv + "\"") != std::string::npos;
    if (all)
      total += v;
  }
  return total;
}

} // namespace ef
