#include "app/page/recovery_view.hpp"

#include "actors/gauges.hpp"
#include "app/page/stage_view.hpp"
#include <eventforge/messages/dlq_messages.hpp>

#include "kafka/offsets.hpp"
#include "messages/ids.hpp"
#include "persistence/ops_queries.hpp"
#include "persistence/repair_store.hpp"
#include "persistence/trace_queries.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace ef::app {

namespace {

using json = nlohmann::json;

constexpr auto positions_ttl = std::chrono::milliseconds(250);
constexpr auto overview_ttl = std::chrono::milliseconds(1000);
constexpr int broker_timeout_ms = 2000;

json or_null(const std::string& s) {
  return s.empty() ? json(nullptr) : json(s);
}

template <class Int>
json or_null(Int x) {
  return x < 0 ? json(nullptr) : json(x);
}

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

std::string delivery_text(const persistence::traced_delivery& d,
                          const std::string& consumer) {
  auto where = d.offset >= 0 ? " (partition " + std::to_string(d.partition) +
                                 ", offset " + std::to_string(d.offset) + ")"
                             : std::string{};
  if (d.outcome == "applied")
    return consumer + " received the record" + where +
           ", inserted its processed_events row and made the business "
           "change in one transaction";
  if (d.outcome == "suppressed")
    return consumer + " received the record again" + where +
           "; its processed_events row already existed, so nothing changed";
  if (d.outcome == "rolled_back")
    return consumer + " received the record and crashed at " + d.point +
           " before its transaction or DLQ entry was committed";
  return consumer + " parked the record" + where +
         " in the DLQ after its last attempt";
}

} // namespace

recovery_view::recovery_view(const config::settings& cfg, std::string dsn,
                             std::string brokers,
                             std::shared_ptr<telemetry> metrics)
    : cfg_(cfg), dsn_(std::move(dsn)),
      cluster_(kafka::cluster_of(cfg, std::move(brokers))),
      metrics_(std::move(metrics)) {
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
  json out;
  out["order_id"] = rows.order_id;
  out["order"] = {{"status", rows.status},
                  {"customer_id", rows.customer_id},
                  {"total_cents", rows.total_cents},
                  {"created_at", rows.created_at},
                  {"updated_at", rows.updated_at}};
  json timeline = json::array();
  json committed_hops = json::array(); // no time: they go last
  std::map<std::string, int> deliveries, changes;
  bool settled = !rows.events.empty();
  out["events"] = json::array();
  for (auto& e : rows.events) {
    timeline.push_back(
      {{"at", e.created_at},
       {"hop", "committed"},
       {"event_id", e.event_id},
       {"shard", e.shard},
       {"text", "The order and its " + e.event_type + " outbox row (seq " +
                  std::to_string(e.seq) + ", shard " + std::to_string(e.shard) +
                  ") were committed in one transaction"}});
    if (!e.sent_at.empty())
      timeline.push_back(
        {{"at", e.sent_at},
         {"hop", "published"},
         {"event_id", e.event_id},
         {"partition", e.partition},
         {"offset", e.offset},
         {"text", "The relay published it keyed by the order ID to partition " +
                    std::to_string(e.partition) + " (offset " +
                    std::to_string(e.offset) +
                    ") and marked the row sent after "
                    "the ack; publish attempts " +
                    std::to_string(e.publish_attempts) +
                    (e.republish_count > 0
                       ? ", queued again " + std::to_string(e.republish_count) +
                           " time(s)"
                       : std::string{})}});
    settled = settled && !e.sent_at.empty();
    // Copies the consumers read that the outbox does not name: an earlier
    // publish the relay never marked (it crashed after the ack), or a DLQ
    // replay (which has its own hop). Their publish time is not recorded;
    // the hop takes the time of the copy's first delivery.
    std::map<std::pair<int, long long>, std::string> copies;
    std::string replay_from;
    for (auto& [name, c] : e.consumers) {
      if (c.dlq && c.dlq->status == "replayed" && !c.dlq->resolved_at.empty())
        replay_from = replay_from.empty()
                        ? c.dlq->resolved_at
                        : std::min(replay_from, c.dlq->resolved_at);
      for (auto& d : c.deliveries) {
        if (d.offset < 0 ||
            (d.partition == e.partition && d.offset == e.offset))
          continue;
        auto& first = copies[{d.partition, d.offset}];
        if (first.empty() || d.at < first)
          first = d.at;
      }
    }
    for (auto& [where, at] : copies) {
      if (!replay_from.empty() && at >= replay_from)
        continue;
      timeline.push_back(
        {{"at", at},
         {"hop", "published"},
         {"marked", false},
         {"event_id", e.event_id},
         {"partition", where.first},
         {"offset", where.second},
         {"text", "An earlier copy at partition " +
                    std::to_string(where.first) + ", offset " +
                    std::to_string(where.second) +
                    " was on the topic: published and acknowledged, never "
                    "marked sent (shown at its first delivery; the publish "
                    "time is not recorded)"}});
    }
    json consumers = json::array();
    for (auto& [name, c] : e.consumers) {
      auto& committed = pos.committed[name];
      // The offset is committed past the event once it is past every copy
      // this consumer was handed.
      long long highest = -1;
      int partition = e.partition;
      for (auto& d : c.deliveries)
        if (d.offset > highest) {
          highest = d.offset;
          partition = d.partition;
        }
      // The outbox's recorded copy too: a republished event is not settled
      // before the consumer has been handed its last copy. Likewise the
      // last replay copy of any consumer's DLQ entry, which every consumer
      // is handed.
      if (e.partition == partition && e.offset > highest)
        highest = e.offset;
      bool replay_unfinished = false;
      for (auto& [other, oc] : e.consumers) {
        if (!oc.dlq)
          continue;
        replay_unfinished =
          replay_unfinished || oc.dlq->status == dlq_status::replaying;
        if (oc.dlq->replay_partition == partition &&
            oc.dlq->replay_offset > highest)
          highest = oc.dlq->replay_offset;
      }
      long long committed_at =
        partition >= 0 && static_cast<size_t>(partition) < committed.size()
          ? committed[partition]
          : -1;
      bool offset_committed = pos.ok && highest >= 0 && committed_at > highest;
      json ds = json::array();
      for (auto& d : c.deliveries) {
        ds.push_back({{"at", d.at},
                      {"partition", or_null(d.partition)},
                      {"offset", or_null(d.offset)},
                      {"outcome", d.outcome}});
        timeline.push_back({{"at", d.at},
                            {"hop", "delivered"},
                            {"consumer", name},
                            {"event_id", e.event_id},
                            {"partition", or_null(d.partition)},
                            {"offset", or_null(d.offset)},
                            {"outcome", d.outcome},
                            {"text", delivery_text(d, name)}});
      }
      json fx = json::array();
      for (auto& f : c.effects) {
        fx.push_back(
          {{"at", f.at}, {"kind", f.kind}, {"amount_cents", f.amount_cents}});
        timeline.push_back(
          {{"at", f.at},
           {"hop", "effect"},
           {"consumer", name},
           {"event_id", e.event_id},
           {"text", name + " business change: " + f.kind +
                      (f.amount_cents
                         ? " (" + std::to_string(f.amount_cents) + " cents)"
                         : std::string{})}});
      }
      json dlq = nullptr;
      if (c.dlq) {
        auto& d = *c.dlq;
        dlq = {{"id", d.id},
               {"status", d.status},
               {"attempts", d.attempts},
               {"error_class", d.error_class},
               {"parked_at", d.parked_at},
               {"resolved_at", or_null(d.resolved_at)}};
        if (d.status == "replayed" && !d.resolved_at.empty())
          timeline.push_back(
            {{"at", d.resolved_at},
             {"hop", "replayed"},
             {"consumer", name},
             {"event_id", e.event_id},
             {"text", "DLQ entry " + std::to_string(d.id) +
                        " was replayed: published again with the same "
                        "event ID"}});
      }
      if (offset_committed)
        committed_hops.push_back(
          {{"at", nullptr},
           {"hop", "offset_committed"},
           {"consumer", name},
           {"event_id", e.event_id},
           {"partition", partition},
           {"offset", committed_at},
           {"text", "The group eventforge." + name + " committed offset " +
                      std::to_string(committed_at) + " on partition " +
                      std::to_string(partition) +
                      ", after the database commit"}});
      bool done = c.processed || (c.dlq && c.dlq->status == "discarded");
      settled = settled && done && offset_committed && !replay_unfinished;
      deliveries[name] += static_cast<int>(c.deliveries.size());
      changes[name] += static_cast<int>(c.effects.size());
      consumers.push_back({{"consumer", name},
                           {"group", "eventforge." + name},
                           {"committed_offset", or_null(committed_at)},
                           {"offset_committed", offset_committed},
                           {"deliveries", ds},
                           {"effects", fx},
                           {"dlq", dlq}});
    }
    out["events"].push_back(
      {{"event_id", e.event_id},
       {"event_type", e.event_type},
       {"seq", e.seq},
       {"shard", e.shard},
       {"trace_id", e.traceparent.size() >= 35 ? e.traceparent.substr(3, 32)
                                               : std::string{}},
       {"created_at", e.created_at},
       {"sent_at", or_null(e.sent_at)},
       {"publish_attempts", e.publish_attempts},
       {"republish_count", e.republish_count},
       {"last_error", or_null(e.last_error)},
       {"epoch", or_null(e.epoch)},
       {"partition", or_null(e.partition)},
       {"offset", or_null(e.offset)},
       {"consumers", consumers}});
  }
  std::string focus;
  for (auto& i : rows.incidents) {
    if (i.kind == "suppressed")
      continue; // shown as a delivery
    json hop = {{"at", i.at}, {"hop", i.kind}, {"text", i.detail}};
    if (!i.point.empty())
      hop["point"] = i.point;
    if (!i.actor.empty())
      hop["actor"] = i.actor;
    if (!i.consumer.empty()) {
      hop["consumer"] = i.consumer;
      if (focus.empty())
        focus = i.consumer;
    }
    if (i.kind == "crash")
      hop["text"] = (i.consumer.empty() ? i.actor : i.consumer) +
                    " crashed at " + i.point + " (injected)";
    timeline.push_back(hop);
  }
  std::stable_sort(
    timeline.begin(), timeline.end(), [](const json& a, const json& b) {
      return a["at"].get<std::string>() < b["at"].get<std::string>();
    });
  for (auto& h : committed_hops)
    timeline.push_back(h);
  // The consumer the failure hit: the one a crash names, else the one with
  // the most deliveries, else the first.
  if (focus.empty() && !cfg_.consumer.enabled.empty()) {
    focus = cfg_.consumer.enabled.front();
    for (auto& name : cfg_.consumer.enabled)
      if (deliveries[name] > deliveries[focus])
        focus = name;
  }
  out["timeline"] = timeline;
  out["settled"] = settled;
  out["counters"] = {{"focus_consumer", focus},
                     {"logical_events", rows.events.size()},
                     {"deliveries", deliveries},
                     {"business_changes", changes}};
  return out;
}

} // namespace ef::app
