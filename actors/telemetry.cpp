#include <eventforge/actors/telemetry.hpp>

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

enum class kind { counter, gauge, histogram };

struct family {
  kind type;
  const char* help;
  const std::vector<double>* buckets = nullptr;
};

// From 100 us (a handler's statement, a batch's ack on loopback) to a
// minute (a backlog, an outage): measured end-to-end latency is 6 ms p50 at
// 100 orders/s and tens of seconds while a backlog drains
// (docs/performance.md), so the lowest buckets must not lump them together.
const std::vector<double> latency_buckets{
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
  0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
const std::vector<double> size_buckets{1,   2,   5,   10,   25,  50,
                                       100, 250, 500, 1000, 5000};

/// Every metric EventForge exports: the one place its type and meaning are
/// declared.
const std::map<std::string, family>& catalog() {
  static const std::map<std::string, family> all{
    {"api_orders_total", {kind::counter, "Orders accepted by the API."}},
    {"api_commands_expired_total",
     {kind::counter, "Order commands refused or rolled back because their "
                     "deadline passed before they could be committed; "
                     "nothing of them was written."}},
    {"http_requests_total",
     {kind::counter, "HTTP requests by route and status class."}},
    {"http_open_connections",
     {kind::gauge, "HTTP connections open now (at most "
                   "http.max-connections)."}},
    {"http_connections_rejected_total",
     {kind::counter, "Connections answered 503 because all "
                     "http.max-connections were in use."}},
    {"http_accept_errors_total",
     {kind::counter, "Failed accepts of the HTTP listener by error (EMFILE, "
                     "ENFILE, ENOBUFS, ...); it accepts again after a short "
                     "pause."}},
    {"http_blocking_refused_total",
     {kind::counter, "Requests answered 503 at once because 16 requests "
                     "already wait for the database or the broker (/readyz, "
                     "/overview, traces, scenario runs)."}},
    {"http_request_duration_seconds",
     {kind::histogram, "HTTP request latency by route.", &latency_buckets}},
    {"outbox_unsent_rows", {kind::gauge, "Outbox rows not yet published."}},
    {"outbox_oldest_unsent_age_seconds",
     {kind::gauge, "Age of the oldest unpublished outbox row (0 if none)."}},
    {"relay_published_total",
     {kind::counter, "Outbox rows published and marked sent, per shard."}},
    {"relay_publish_errors_total",
     {kind::counter, "Records the broker did not acknowledge, per shard."}},
    {"api_batch_size",
     {kind::histogram, "Order commands committed per API transaction.",
      &size_buckets}},
    {"consumer_batch_size",
     {kind::histogram,
      "Events applied per consumer transaction (batched "
      "path).",
      &size_buckets}},
    {"relay_batch_size",
     {kind::histogram, "Rows per relay publish batch.", &size_buckets}},
    {"relay_publish_ack_seconds",
     {kind::histogram,
      "Time from handing a batch to the producer until "
      "every delivery report arrived.",
      &latency_buckets}},
    {"outbox_publish_delay_seconds",
     {kind::histogram,
      "Time from an outbox row's insert until the broker acknowledged its "
      "record (database and process clocks; one observation per "
      "acknowledged row).",
      &latency_buckets}},
    {"relay_claim_to_mark_seconds",
     {kind::histogram,
      "Time from reading a batch of unsent rows until they were marked sent "
      "(publish, acks and the mark's transaction).",
      &latency_buckets}},
    {"consumer_deliveries_total",
     {kind::counter, "Records handed to a partition actor (every delivery)."}},
    {"consumer_applied_total",
     {kind::counter, "Events applied (first delivery per consumer)."}},
    {"consumer_duplicates_suppressed_total",
     {kind::counter, "Idempotency conflicts: deliveries the guard "
                     "suppressed."}},
    {"consumer_retries_total",
     {kind::counter, "Failed attempts that will be retried inline."}},
    {"consumer_rebalances_total",
     {kind::counter, "Partition assignments received."}},
    {"consumer_lag",
     {kind::gauge, "Log end offset minus committed offset, per consumer and "
                   "partition."}},
    {"consumer_handler_seconds",
     {kind::histogram, "Idempotent handler transaction latency.",
      &latency_buckets}},
    {"end_to_end_seconds",
     {kind::histogram, "Outbox insert until the business effect committed.",
      &latency_buckets}},
    {"dlq_parked_total",
     {kind::counter, "Deliveries parked in the DLQ, by consumer and class."}},
    {"dlq_entries", {kind::gauge, "DLQ entries by status."}},
    {"dlq_oldest_parked_age_seconds",
     {kind::gauge, "Age of the oldest unresolved DLQ entry (0 if none)."}},
    {"actor_restarts_total",
     {kind::counter, "Actor restarts by kind and reason class."}},
    {"actors_down",
     {kind::gauge, "Supervised actors currently waiting to be restarted."}},
    {"retention_deleted_total",
     {kind::counter, "Rows deleted by the retention janitor, by table."}},
    {"recovery_journal_dropped_total",
     {kind::counter, "Recovery journal lines dropped: its bounded queue was "
                     "full while the database was unreachable, or the "
                     "database refused them."}},
    {"chaos_crashes_total",
     {kind::counter, "Crashes injected at each crash point."}},
    {"consumer_positions_lost_total",
     {kind::counter, "Positions a consumer found gone from the broker "
                     "(trimmed log, new broker), per consumer."}},
    {"consumer_fetch_stalls_total",
     {kind::counter, "Owned partitions with records to read that were fed "
                     "nothing for 10 s and had their fetch restarted."}},
    {"consumer_deferred_total",
     {kind::counter, "Events held back because an earlier event of their "
                     "order was missing; queued again behind it."}},
    {"repair_republished_total",
     {kind::counter, "Events queued for republishing because a consumer "
                     "could no longer read them, by reason."}},
    {"broker_epochs_total",
     {kind::counter, "Broker epochs this process began: the broker had lost "
                     "records the outbox published."}},
    {"broker_epoch", {kind::gauge, "Current broker epoch."}},
    {"gauges_sampled_timestamp_seconds",
     {kind::gauge, "When the outbox and DLQ gauges (source database) and "
                   "consumer_lag (source broker) were last read; it stops "
                   "moving while the source is down."}},
    {"relay_waiting_for_consumers",
     {kind::gauge, "1 while a relay shard waits: a partition holds "
                   "relay.max-lead-bytes beyond the slowest consumer."}},
    {"consumer_partitions_parked",
     {kind::gauge, "Owned partitions read to the end that stopped fetching "
                   "until a relay announces a record (kafka.park-idle-ms)."}},
  };
  return all;
}

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
    for (auto& [name, fam] : catalog()) {
      switch (fam.type) {
      case kind::counter:
        families_->counters[name] =
          &prometheus::BuildCounter().Name(name).Help(fam.help).Register(
            *registry_);
        break;
      case kind::gauge:
        families_->gauges[name] =
          &prometheus::BuildGauge().Name(name).Help(fam.help).Register(
            *registry_);
        break;
      case kind::histogram:
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
  auto& bounds = *catalog().at(name).buckets;
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
