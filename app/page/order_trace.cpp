// One order's trace, from its rows and the groups' committed offsets: every
// hop of every event on one timeline, per consumer what it was handed, did
// and parked, and whether the order is settled (nothing left to happen).

#include "app/page/order_trace.hpp"

#include "app/page/consumer_trace.hpp"
#include "app/page/or_null.hpp"

#include <algorithm>

namespace ef::app {

namespace {

using json = nlohmann::json;
using persistence::traced_consumer;
using persistence::traced_event;

/// Builds the trace event by event; the timeline collects every hop.
class trace_builder {
public:
  explicit trace_builder(const committed_offsets& offsets)
      : offsets_(offsets) {}

  json event(const traced_event& e) {
    commit_and_publish_hops(e);
    unmarked_copy_hops(e);
    json consumers = json::array();
    for (auto& [name, c] : e.consumers)
      consumers.push_back(consumer(e, name, c));
    return {{"event_id", e.event_id},
            {"event_type", e.event_type},
            {"seq", e.seq},
            {"shard", e.shard},
            {"trace_id", e.traceparent.size() >= 35
                           ? e.traceparent.substr(3, 32)
                           : std::string{}},
            {"created_at", e.created_at},
            {"sent_at", or_null(e.sent_at)},
            {"publish_attempts", e.publish_attempts},
            {"republish_count", e.republish_count},
            {"last_error", or_null(e.last_error)},
            {"epoch", or_null(e.epoch)},
            {"partition", or_null(e.partition)},
            {"offset", or_null(e.offset)},
            {"consumers", consumers}};
  }

  /// Incidents from the recovery journal; returns the consumer the first
  /// one names ("" if none).
  std::string incidents(const std::vector<persistence::traced_incident>& all) {
    std::string focus;
    for (auto& i : all) {
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
      hops_.timed.push_back(hop);
    }
    return focus;
  }

  /// The hops in time order, then the offset commits (which have none).
  json timeline() {
    auto& timeline = hops_.timed;
    std::stable_sort(
      timeline.begin(), timeline.end(), [](const json& a, const json& b) {
        return a["at"].get<std::string>() < b["at"].get<std::string>();
      });
    for (auto& h : hops_.committed)
      timeline.push_back(h);
    return timeline;
  }

  bool settled = true;
  std::map<std::string, int> deliveries, changes;

private:
  void commit_and_publish_hops(const traced_event& e) {
    hops_.timed.push_back(
      {{"at", e.created_at},
       {"hop", "committed"},
       {"event_id", e.event_id},
       {"shard", e.shard},
       {"text", "The order and its " + e.event_type + " outbox row (seq " +
                  std::to_string(e.seq) + ", shard " + std::to_string(e.shard) +
                  ") were committed in one transaction"}});
    if (!e.sent_at.empty())
      hops_.timed.push_back(
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
  }

  /// Copies the consumers read that the outbox does not name: an earlier
  /// publish the relay never marked (it crashed after the ack), or a DLQ
  /// replay (which has its own hop). Their publish time is not recorded;
  /// the hop takes the time of the copy's first delivery.
  void unmarked_copy_hops(const traced_event& e) {
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
      hops_.timed.push_back(
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
  }

  json consumer(const traced_event& e, const std::string& name,
                const traced_consumer& c) {
    auto part = trace_consumer(e, name, c, offsets_, hops_);
    settled = settled && part.settled;
    deliveries[name] += static_cast<int>(c.deliveries.size());
    changes[name] += static_cast<int>(c.effects.size());
    return part.entry;
  }

  const committed_offsets& offsets_;
  trace_hops hops_;
};

} // namespace

json order_trace(const persistence::order_trace_rows& rows,
                 const committed_offsets& offsets,
                 const std::vector<std::string>& consumers) {
  json out;
  out["order_id"] = rows.order_id;
  out["order"] = {{"status", rows.status},
                  {"customer_id", rows.customer_id},
                  {"total_cents", rows.total_cents},
                  {"created_at", rows.created_at},
                  {"updated_at", rows.updated_at}};
  trace_builder trace(offsets);
  trace.settled = !rows.events.empty();
  out["events"] = json::array();
  for (auto& e : rows.events)
    out["events"].push_back(trace.event(e));
  auto focus = trace.incidents(rows.incidents);
  // The consumer the failure hit: the one a crash names, else the one with
  // the most deliveries, else the first.
  if (focus.empty() && !consumers.empty()) {
    focus = consumers.front();
    for (auto& name : consumers)
      if (trace.deliveries[name] > trace.deliveries[focus])
        focus = name;
  }
  out["timeline"] = trace.timeline();
  out["settled"] = trace.settled;
  out["counters"] = {{"focus_consumer", focus},
                     {"logical_events", rows.events.size()},
                     {"deliveries", trace.deliveries},
                     {"business_changes", trace.changes}};
  return out;
}

} // namespace ef::app
