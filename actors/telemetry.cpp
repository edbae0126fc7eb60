#include "actors/telemetry.hpp"

#include <cmath>
#include <set>
#include <sstream>

namespace ef {

namespace {

enum class kind { counter, gauge, histogram };

struct family {
  kind type;
  const char* help;
  const std::vector<double>* buckets = nullptr;
};

const std::vector<double> latency_buckets{
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
const std::vector<double> size_buckets{1,   2,   5,   10,   25,  50,
                                       100, 250, 500, 1000, 5000};

/// Every metric EventForge exports: the one place its type and meaning are
/// declared.
const std::map<std::string, family>& catalog() {
  static const std::map<std::string, family> all{
    {"api_orders_total", {kind::counter, "Orders accepted by the API."}},
    {"http_requests_total",
     {kind::counter, "HTTP requests by route and status class."}},
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
    {"chaos_crashes_total",
     {kind::counter, "Crashes injected at each crash point."}},
    {"consumer_positions_lost_total",
     {kind::counter, "Positions a consumer found gone from the broker "
                     "(trimmed log, new broker), per consumer."}},
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
  };
  return all;
}

std::string name_of(const std::string& key) {
  return key.substr(0, key.find('{'));
}

std::string labels_of(const std::string& key) {
  auto b = key.find('{');
  return b == std::string::npos ? "" : key.substr(b + 1, key.size() - b - 2);
}

std::string with_label(const std::string& name, const std::string& labels,
                       const std::string& extra) {
  std::string all = labels;
  if (!extra.empty())
    all += (all.empty() ? "" : ",") + extra;
  return all.empty() ? name : name + "{" + all + "}";
}

std::string number(double v) {
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

} // namespace

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

void telemetry::set(const std::string& name, const labels& l, double value) {
  auto k = key(name, l);
  std::lock_guard<std::mutex> guard{mtx_};
  gauges_[k] = value;
}

void telemetry::observe(const std::string& name, const labels& l,
                        double value) {
  auto i = catalog().find(name);
  if (i == catalog().end() || i->second.buckets == nullptr)
    return;
  auto& bounds = *i->second.buckets;
  auto k = key(name, l);
  std::lock_guard<std::mutex> guard{mtx_};
  auto& h = histograms_[k];
  if (h.buckets.empty())
    h.buckets.assign(bounds.size(), 0);
  for (size_t b = 0; b < bounds.size(); ++b)
    if (value <= bounds[b])
      ++h.buckets[b];
  h.sum += value;
  ++h.count;
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
    if (name_of(k) != name)
      continue;
    bool all = true;
    for (auto& [lk, lv] : match)
      all = all && k.find(lk + "=\"" + lv + "\"") != std::string::npos;
    if (all)
      total += v;
  }
  return total;
}

void telemetry::declare(const std::string& name, const labels& l) {
  std::lock_guard<std::mutex> guard{mtx_};
  counters_.emplace(key(name, l), 0);
}

std::map<std::string, double>
telemetry::positive_gauges(const std::string& name) const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::map<std::string, double> out;
  for (auto& [k, v] : gauges_)
    if (name_of(k) == name && v > 0)
      out.emplace(k, v);
  return out;
}

std::string telemetry::render_prometheus() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::ostringstream out;
  for (auto& [name, fam] : catalog()) {
    out << "# HELP " << name << " " << fam.help << "\n";
    switch (fam.type) {
    case kind::counter:
      out << "# TYPE " << name << " counter\n";
      for (auto& [k, v] : counters_)
        if (name_of(k) == name)
          out << k << " " << v << "\n";
      break;
    case kind::gauge:
      out << "# TYPE " << name << " gauge\n";
      for (auto& [k, v] : gauges_)
        if (name_of(k) == name)
          out << k << " " << number(v) << "\n";
      break;
    case kind::histogram:
      out << "# TYPE " << name << " histogram\n";
      for (auto& [k, h] : histograms_) {
        if (name_of(k) != name)
          continue;
        auto l = labels_of(k);
        auto& bounds = *fam.buckets;
        for (size_t b = 0; b < bounds.size(); ++b)
          out << with_label(name + "_bucket", l,
                            "le=\"" + number(bounds[b]) + "\"")
              << " " << h.buckets[b] << "\n";
        out << with_label(name + "_bucket", l, "le=\"+Inf\"") << " " << h.count
            << "\n";
        out << with_label(name + "_sum", l, "") << " " << number(h.sum) << "\n";
        out << with_label(name + "_count", l, "") << " " << h.count << "\n";
      }
      break;
    }
  }
  return out.str();
}

} // namespace ef
