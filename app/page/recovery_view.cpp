#include "app/page/recovery_view.hpp"

#include "actors/gauges.hpp"
#include "app/page/or_null.hpp"
#include "app/page/order_trace.hpp"
#include "app/page/stage_view.hpp"
#include <eventforge/messages/dlq_messages.hpp>

#include "kafka/offsets.hpp"
#include "messages/ids.hpp"
#include "persistence/ops_queries.hpp"
#include "persistence/repair_store.hpp"
#include "persistence/scenario_arms.hpp"
#include "persistence/trace_queries.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace ef::app {

namespace {

using json = nlohmann::json;

constexpr auto positions_ttl = std::chrono::milliseconds(250);
constexpr auto overview_ttl = std::chrono::milliseconds(1000);
constexpr int broker_timeout_ms = 2000;

/// The supervisors with a child waiting for its restart, from the live
/// actors_down gauges: a state of now, not a count since start.
std::vector<std::string> restarting(telemetry& metrics) {
  std::vector<std::string> out;
  for (auto& [key, value] : metrics.positive_gauges("actors_down")) {
    auto from = key.find('"') + 1;
    out.push_back(key.substr(from, key.rfind('"') - from));
  }
  return out;
}

} // namespace

recovery_view::recovery_view(const config::settings& cfg, std::string dsn,
                             std::string brokers,
                             std::shared_ptr<telemetry> metrics)
    : cfg_(cfg), dsn_(std::move(dsn)),
      cluster_(kafka::cluster_of(cfg, std::move(brokers))),
      metrics_(std::move(metrics)),
      arms_(std::make_shared<persistence::scenario_arm_store>(dsn_)) {
  // nop
}

recovery_view::broker_positions recovery_view::positions() {
  std::lock_guard<std::mutex> guard{positions_mtx_};
  auto now = std::chrono::steady_clock::now();
  if (now - positions_at_ < positions_ttl)
    return positions_;
  broker_positions p;
  try {
    auto ends = kafka::log_end_offsets(
      cluster_, cfg_.kafka.topic, cfg_.kafka.partitions, broker_timeout_ms);
    p.log_end.assign(ends.begin(), ends.end());
    for (auto& c : cfg_.consumer.enabled) {
      auto committed =
        kafka::committed_offsets(cluster_, "eventforge." + c, cfg_.kafka.topic,
                                 cfg_.kafka.partitions, broker_timeout_ms);
      p.committed[c].assign(committed.begin(), committed.end());
    }
    p.ok = true;
  } catch (const std::exception& e) {
    p.error = e.what();
  }
  positions_ = p;
  positions_at_ = std::chrono::steady_clock::now();
  return p;
}

json recovery_view::overview() {
  std::lock_guard<std::mutex> guard{overview_mtx_};
  auto now = std::chrono::steady_clock::now();
  if (overview_.is_null() || now - overview_at_ >= overview_ttl) {
    overview_ = read_overview();
    overview_at_ = std::chrono::steady_clock::now();
  }
  return overview_;
}

json recovery_view::read_overview() {
  json out;
  out["at"] = now_rfc3339();
  persistence::overview_rows rows;
  persistence::ops_rows ops;
  persistence::repair_summary repair;
  bool db_ok = true;
  try {
    rows = persistence::read_overview_rows(dsn_);
    ops = persistence::read_ops_rows(dsn_);
    repair = persistence::repair_store(dsn_).summary();
    out["database"] = {{"ok", true}, {"error", ""}};
  } catch (const std::exception& e) {
    db_ok = false;
    out["database"] = {{"ok", false}, {"error", e.what()}};
  }
  auto pos = positions();
  out["broker"] = {{"ok", pos.ok},
                   {"error", pos.error},
                   {"epoch", db_ok ? json(repair.epoch) : json(nullptr)}};
  auto db = [&](auto value) { return db_ok ? json(value) : json(nullptr); };
  out["orders"] = db(rows.orders);
  out["logical_events"] = db(rows.logical_events);
  out["consumers"] = json::array();
  for (auto& name : cfg_.consumer.enabled) {
    auto i = rows.consumers.find(name);
    auto c = i == rows.consumers.end()
               ? persistence::overview_rows::per_consumer{}
               : i->second;
    json lag = json::array();
    json lag_total = nullptr;
    if (pos.ok) {
      long long total = 0;
      // The same arithmetic as `eventforge status` and the lag gauges.
      for (auto& l : lag_of(pos.log_end, pos.committed[name])) {
        total += l.lag;
        lag.push_back({{"partition", l.partition},
                       {"log_end", l.log_end},
                       {"committed", or_null(l.committed)},
                       {"lag", l.lag}});
      }
      lag_total = total;
    }
    out["consumers"].push_back({{"name", name},
                                {"deliveries", db(c.processed + c.suppressed +
                                                  c.rolled_back + c.parked)},
                                {"business_changes", db(c.business_changes)},
                                {"duplicates_suppressed", db(c.suppressed)},
                                {"rolled_back", db(c.rolled_back)},
                                {"lag_total", lag_total},
                                {"lag", lag}});
  }
  auto parked = [&](const char* status) {
    auto i = ops.dlq_by_status.find(status);
    return db(i == ops.dlq_by_status.end() ? 0L : i->second);
  };
  out["outbox"] = {{"unsent", db(ops.outbox_unsent)},
                   {"oldest_unsent_age_s", db(ops.outbox_oldest_unsent_age_s)},
                   {"republished", db(repair.republished_total)}};
  out["dlq"] = nlohmann::json::object();
  for (auto status : dlq_status::all)
    out["dlq"][status] = parked(status);
  out["actors"] = {{"restarting", restarting(*metrics_)},
                   {"restarts_recorded", db(rows.restarts)},
                   {"crashes_recorded", db(rows.crashes)}};
  out["stages"] = read_stages();
  return out;
}

json recovery_view::read_stages() {
  struct stage {
    std::string name, what, histogram;
    telemetry::labels match;
  };
  // The same histograms as /metrics and the dashboard (deploy/grafana).
  std::vector<stage> stages{{"api",
                             "orders answered (POST /orders)",
                             "http_request_duration_seconds",
                             {{"route", "/orders"}}},
                            {"relay",
                             "rows published (insert to broker ack)",
                             "outbox_publish_delay_seconds",
                             {}}};
  for (auto& c : cfg_.consumer.enabled)
    stages.push_back({c,
                      "effects applied (insert to effect committed)",
                      "end_to_end_seconds",
                      {{"consumer", c}}});
  stage_reading now{std::chrono::steady_clock::now(), {}};
  for (auto& s : stages)
    now.stages.push_back(metrics_->histogram_total(s.histogram, s.match));
  // Keep readings for up to 30 s: the figures cover the window since the
  // oldest, so a page polling every second sees rates over tens of seconds.
  stage_readings_.push_back(now);
  while (stage_readings_.size() > 1 &&
         now.at - stage_readings_.front().at > std::chrono::seconds(30))
    stage_readings_.erase(stage_readings_.begin());
  auto& oldest = stage_readings_.front();
  auto window = std::chrono::duration<double>(now.at - oldest.at).count();
  json out = json::array();
  for (size_t i = 0; i < stages.size(); ++i) {
    json row{{"stage", stages[i].name},
             {"what", stages[i].what},
             {"window_s", window},
             {"total", now.stages[i].count}};
    if (window > 0) {
      auto f = between(oldest.stages[i], now.stages[i], window);
      row["per_second"] = f.per_second;
      row["p50_ms"] = f.p50_ms ? json(*f.p50_ms) : json(nullptr);
      row["p99_ms"] = f.p99_ms ? json(*f.p99_ms) : json(nullptr);
      // What the histogram really knows: the bucket (upper null: past the
      // last finite bound). The page shows these, not the estimate.
      auto bucket = [](const std::optional<bucket_range>& b) {
        if (!b)
          return json(nullptr);
        return json{
          {"gt_ms", b->lower},
          {"le_ms", std::isinf(b->upper) ? json(nullptr) : json(b->upper)}};
      };
      row["p50_bucket"] = bucket(f.p50_bucket_ms);
      row["p99_bucket"] = bucket(f.p99_bucket_ms);
    } else {
      row["per_second"] = nullptr;
      row["p50_ms"] = nullptr;
      row["p99_ms"] = nullptr;
    }
    out.push_back(row);
  }
  return out;
}

std::optional<json> recovery_view::trace(const std::string& order_id) {
  // Offsets before rows, as the verifier reads them: a partition actor
  // writes every journal line of a record (a suppressed redelivery) before
  // its offset is committed, so an offset seen committed here has all its
  // lines in the rows read after it. The other order could call a trace
  // settled while it still misses the last delivery.
  auto pos = positions();
  auto rows =
    persistence::read_order_trace(dsn_, order_id, cfg_.consumer.enabled);
  if (!rows.found)
    return std::nullopt;
  auto out = order_trace(rows, {pos.ok, pos.committed}, cfg_.consumer.enabled);
  // Which node armed the scenario's crash and which fired it: a run posted
  // to one node may crash on another, and the page says so.
  if (auto arm = arms_->of_order(order_id))
    out["scenario"] = {{"name", arm->scenario},
                       {"point", or_null(arm->point)},
                       {"consumer", or_null(arm->consumer)},
                       {"armed_by", arm->armed_by},
                       {"armed_on", arm->seen_by},
                       {"fired_by", or_null(arm->fired_by)},
                       {"fired_at", or_null(arm->fired_at)}};
  return out;
}

} // namespace ef::app
