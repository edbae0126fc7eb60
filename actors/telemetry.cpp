#include <eventforge/actors/telemetry.hpp>

#include "actors/metric_catalog.hpp"
#include "actors/process_metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

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

struct telemetry::families {
  std::map<std::string, prometheus::Family<prometheus::Counter>*> counters;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> gauges;
  std::map<std::string, prometheus::Family<prometheus::Histogram>*> histograms;
};

telemetry::telemetry(std::shared_ptr<prometheus::Registry> registry)
    : registry_(registry ? std::move(registry)
                         : std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<families>()) {
  // prometheus-cpp refuses a name registered with another type, and hands
  // back the existing family for the same name and type: a host may build
  // two trees over one registry.
  try {
    for (auto& [name, fam] : metric_catalog()) {
      switch (fam.type) {
      case metric_kind::counter:
        families_->counters[name] =
          &prometheus::BuildCounter().Name(name).Help(fam.help).Register(
            *registry_);
        break;
      case metric_kind::gauge:
        families_->gauges[name] =
          &prometheus::BuildGauge().Name(name).Help(fam.help).Register(
            *registry_);
        break;
      case metric_kind::histogram:
        families_->histograms[name] =
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

prometheus::Counter* telemetry::counter(const std::string& name,
                                        const labels& l) {
  auto k = key(name, l);
  if (auto i = counters_.find(k); i != counters_.end())
    return i->second;
  auto fam = families_->counters.find(name);
  if (fam == families_->counters.end())
    return nullptr;
  auto* c = &fam->second->Add(label_map(l));
  counters_.emplace(k, c);
  return c;
}

void telemetry::add(const std::string& name, const labels& l, std::uint64_t n) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (auto* c = counter(name, l))
    c->Increment(static_cast<double>(n));
}

prometheus::Histogram* telemetry::histogram(const std::string& name,
                                            const labels& l) {
  auto k = key(name, l);
  if (auto i = histograms_.find(k); i != histograms_.end())
    return i->second;
  auto fam = families_->histograms.find(name);
  if (fam == families_->histograms.end())
    return nullptr;
  auto& bounds = *metric_catalog().at(name).buckets;
  auto* h = &fam->second->Add(
    label_map(l),
    prometheus::Histogram::BucketBoundaries(bounds.begin(), bounds.end()));
  histograms_.emplace(k, h);
  return h;
}

void telemetry::declare(const std::string& name, const labels& l) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!counter(name, l))
    histogram(name, l);
}

void telemetry::set(const std::string& name, const labels& l, double value) {
  auto k = key(name, l);
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = gauges_.find(k);
  if (i == gauges_.end()) {
    auto fam = families_->gauges.find(name);
    if (fam == families_->gauges.end())
      return;
    i = gauges_.emplace(k, &fam->second->Add(label_map(l))).first;
  }
  i->second->Set(value);
}

void telemetry::observe(const std::string& name, const labels& l,
                        double value) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (auto* h = histogram(name, l))
    h->Observe(value);
}

std::map<std::string, std::uint64_t> telemetry::snapshot() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::map<std::string, std::uint64_t> out;
  for (auto& [k, c] : counters_)
    out.emplace(k, static_cast<std::uint64_t>(c->Value()));
  return out;
}

std::uint64_t telemetry::sum(const std::string& name,
                             const labels& match) const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::uint64_t total = 0;
  for (auto& [k, c] : counters_) {
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
  std::lock_guard<std::mutex> guard{mtx_};
  std::map<std::string, double> out;
  for (auto& [k, g] : gauges_)
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
