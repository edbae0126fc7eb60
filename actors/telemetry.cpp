#include <eventforge/actors/telemetry.hpp>

#include "actors/metric_catalog.hpp"
#include "actors/process_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <mutex>
#include <stdexcept>

namespace ef {

namespace {

std::string name_of(const std::string& key) {
  return key.substr(0, key.find('{'));
}

std::map<std::string, std::string> label_map(const telemetry::labels& l) {
  return {l.begin(), l.end()};
}

} // namespace

struct telemetry::series {
  /// The families of the catalog, by metric name.
  std::map<std::string, prometheus::Family<prometheus::Counter>*>
    counter_families;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> gauge_families;
  std::map<std::string, prometheus::Family<prometheus::Histogram>*>
    histogram_families;
  /// Series by key (name{labels} in the order the caller gave them), so
  /// reads by key need not search the registry. prometheus-cpp keeps the
  /// series alive as long as its family (the registry).
  mutable std::mutex mtx;
  std::map<std::string, prometheus::Counter*> counters;
  std::map<std::string, prometheus::Gauge*> gauges;
  std::map<std::string, prometheus::Histogram*> histograms;

  /// The series `key` of `name`, created in its family on first use; null
  /// if `name` is not in the catalog (or has another type). Needs mtx.
  prometheus::Counter* counter(const std::string& name, const labels& l);
  /// The same for a histogram series.
  prometheus::Histogram* histogram(const std::string& name, const labels& l);
};

telemetry::telemetry(std::shared_ptr<prometheus::Registry> registry)
    : registry_(registry ? std::move(registry)
                         : std::make_shared<prometheus::Registry>()),
      series_(std::make_unique<series>()) {
  // prometheus-cpp refuses a name registered with another type, and hands
  // back the existing family for the same name and type: a host may build
  // two trees over one registry.
  try {
    for (auto& [name, fam] : metric_catalog()) {
      switch (fam.type) {
      case metric_kind::counter:
        series_->counter_families[name] =
          &prometheus::BuildCounter().Name(name).Help(fam.help).Register(
            *registry_);
        break;
      case metric_kind::gauge:
        series_->gauge_families[name] =
          &prometheus::BuildGauge().Name(name).Help(fam.help).Register(
            *registry_);
        break;
      case metric_kind::histogram:
        series_->histogram_families[name] =
          &prometheus::BuildHistogram().Name(name).Help(fam.help).Register(
            *registry_);
        break;
      }
    }
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(
      std::string("telemetry: the registry already holds one of "
                  "EventForge's metric names with another type: ") +
      e.what());
  }
}

telemetry::~telemetry() = default;

std::string telemetry::key(const std::string& name, const labels& l) {
  if (l.empty())
    return name;
  std::string out = name + "{";
  for (size_t i = 0; i < l.size(); ++i)
    out += (i ? "," : "") + l[i].first + "=\"" + l[i].second + "\"";
  return out + "}";
}

prometheus::Counter* telemetry::series::counter(const std::string& name,
                                                const labels& l) {
  auto k = key(name, l);
  if (auto i = counters.find(k); i != counters.end())
    return i->second;
  auto fam = counter_families.find(name);
  if (fam == counter_families.end())
    return nullptr;
  auto* c = &fam->second->Add(label_map(l));
  counters.emplace(k, c);
  return c;
}

void telemetry::add(const std::string& name, const labels& l, std::uint64_t n) {
  std::lock_guard<std::mutex> guard{series_->mtx};
  if (auto* c = series_->counter(name, l))
    c->Increment(static_cast<double>(n));
}

prometheus::Histogram* telemetry::series::histogram(const std::string& name,
                                                    const labels& l) {
  auto k = key(name, l);
  if (auto i = histograms.find(k); i != histograms.end())
    return i->second;
  auto fam = histogram_families.find(name);
  if (fam == histogram_families.end())
    return nullptr;
  auto& bounds = *metric_catalog().at(name).buckets;
  auto* h = &fam->second->Add(
    label_map(l),
    prometheus::Histogram::BucketBoundaries(bounds.begin(), bounds.end()));
  histograms.emplace(k, h);
  return h;
}

void telemetry::declare(const std::string& name, const labels& l) {
  std::lock_guard<std::mutex> guard{series_->mtx};
  if (!series_->counter(name, l))
    series_->histogram(name, l);
}

void telemetry::set(const std::string& name, const labels& l, double value) {
  auto k = key(name, l);
  std::lock_guard<std::mutex> guard{series_->mtx};
  auto& gauges = series_->gauges;
  auto i = gauges.find(k);
  if (i == gauges.end()) {
    auto fam = series_->gauge_families.find(name);
    if (fam == series_->gauge_families.end())
      return;
    i = gauges.emplace(k, &fam->second->Add(label_map(l))).first;
  }
  i->second->Set(value);
}

void telemetry::unset(const std::string& name, const labels& l) {
  auto k = key(name, l);
  std::lock_guard<std::mutex> guard{series_->mtx};
  auto i = series_->gauges.find(k);
  auto fam = series_->gauge_families.find(name);
  if (i == series_->gauges.end() || fam == series_->gauge_families.end())
    return;
  fam->second->Remove(i->second);
  series_->gauges.erase(i);
}

void telemetry::observe(const std::string& name, const labels& l,
                        double value) {
  std::lock_guard<std::mutex> guard{series_->mtx};
  if (auto* h = series_->histogram(name, l))
    h->Observe(value);
}

std::map<std::string, std::uint64_t> telemetry::snapshot() const {
  std::lock_guard<std::mutex> guard{series_->mtx};
  std::map<std::string, std::uint64_t> out;
  for (auto& [k, c] : series_->counters)
    out.emplace(k, static_cast<std::uint64_t>(c->Value()));
  return out;
}

std::uint64_t telemetry::sum(const std::string& name,
                             const labels& match) const {
  std::lock_guard<std::mutex> guard{series_->mtx};
  std::uint64_t total = 0;
  for (auto& [k, c] : series_->counters) {
    if (name_of(k) != name)
      continue;
    bool all = true;
    for (auto& [lk, lv] : match)
      all = all && k.find(lk + "=\"" + lv + "\"") != std::string::npos;
    if (all)
      total += static_cast<std::uint64_t>(c->Value());
  }
  return total;
}

std::map<std::string, double>
telemetry::positive_gauges(const std::string& name) const {
  std::lock_guard<std::mutex> guard{series_->mtx};
  std::map<std::string, double> out;
  for (auto& [k, g] : series_->gauges)
    if (name_of(k) == name && g->Value() > 0)
      out.emplace(k, g->Value());
  return out;
}

telemetry::histogram_state
telemetry::histogram_total(const std::string& name, const labels& match) const {
  histogram_state out;
  for (auto& family : registry_->Collect()) {
    if (family.name != name)
      continue;
    for (auto& m : family.metric) {
      bool matches = true;
      for (auto& [k, v] : match) {
        bool found = false;
        for (auto& l : m.label)
          found |= l.name == k && l.value == v;
        matches &= found;
      }
      if (!matches)
        continue;
      out.count += m.histogram.sample_count;
      out.sum += m.histogram.sample_sum;
      auto& b = m.histogram.bucket;
      if (out.buckets.empty())
        for (auto& x : b)
          out.buckets.emplace_back(x.upper_bound, 0);
      for (size_t i = 0; i < b.size() && i < out.buckets.size(); ++i)
        out.buckets[i].second += b[i].cumulative_count;
    }
  }
  return out;
}

std::string telemetry::render_prometheus() const {
  auto families = registry_->Collect();
  // The process's own figures, unless the host's registry exports them.
  bool host_has_them = false;
  for (auto& f : families)
    host_has_them |= f.name.rfind("process_", 0) == 0;
  if (!host_has_them)
    for (auto& f : process_metrics())
      families.push_back(std::move(f));
  return prometheus::TextSerializer{}.Serialize(families);
}

} // namespace ef
