// One consumer's part of an order's trace: what it was handed, what it
// did, what it parked, and where its group's offset stands.

#include "app/page/consumer_trace.hpp"

#include "app/page/or_null.hpp"
#include <eventforge/messages/dlq_messages.hpp>

namespace ef::app {

namespace {

using json = nlohmann::json;
using persistence::traced_consumer;
using persistence::traced_event;

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

/// Where a consumer's offset must be committed past for an event to be
/// done with: the highest offset of every copy it was handed, the
/// outbox's recorded copy, and the last replay copy of any consumer's DLQ
/// entry (which every consumer is handed).
struct last_copy {
  int partition;
  long long offset = -1;
  bool replay_unfinished = false;
};

last_copy last_copy_of(const traced_event& e, const traced_consumer& c) {
  last_copy last{e.partition};
  for (auto& d : c.deliveries)
    if (d.offset > last.offset) {
      last.offset = d.offset;
      last.partition = d.partition;
    }
  if (e.partition == last.partition && e.offset > last.offset)
    last.offset = e.offset;
  for (auto& [other, oc] : e.consumers) {
    if (!oc.dlq)
      continue;
    last.replay_unfinished =
      last.replay_unfinished || oc.dlq->status == dlq_status::replaying;
    if (oc.dlq->replay_partition == last.partition &&
        oc.dlq->replay_offset > last.offset)
      last.offset = oc.dlq->replay_offset;
  }
  return last;
}

class consumer_tracer {
public:
  consumer_tracer(const committed_offsets& offsets, trace_hops& hops)
      : offsets_(offsets), hops_(hops) {}

  consumer_part part(const traced_event& e, const std::string& name,
                     const traced_consumer& c) {
    auto last = last_copy_of(e, c);
    long long committed_at = committed_offset(name, last.partition);
    bool offset_committed =
      offsets_.ok && last.offset >= 0 && committed_at > last.offset;
    if (offset_committed)
      hops_.committed.push_back(
        {{"at", nullptr},
         {"hop", "offset_committed"},
         {"consumer", name},
         {"event_id", e.event_id},
         {"partition", last.partition},
         {"offset", committed_at},
         {"text", "The group eventforge." + name + " committed offset " +
                    std::to_string(committed_at) + " on partition " +
                    std::to_string(last.partition) +
                    ", after the database commit"}});
    bool done = c.processed || (c.dlq && c.dlq->status == "discarded");
    json entry = {{"consumer", name},
                  {"group", "eventforge." + name},
                  {"committed_offset", or_null(committed_at)},
                  {"offset_committed", offset_committed},
                  {"deliveries", delivery_hops(e, name, c)},
                  {"effects", effect_hops(e, name, c)},
                  {"dlq", dlq_entry(e, name, c)}};
    return {entry, done && offset_committed && !last.replay_unfinished};
  }

  long long committed_offset(const std::string& consumer, int partition) const {
    auto i = offsets_.by_consumer.find(consumer);
    if (i == offsets_.by_consumer.end() || partition < 0 ||
        static_cast<size_t>(partition) >= i->second.size())
      return -1;
    return i->second[partition];
  }

  json delivery_hops(const traced_event& e, const std::string& name,
                     const traced_consumer& c) {
    json ds = json::array();
    for (auto& d : c.deliveries) {
      ds.push_back({{"at", d.at},
                    {"partition", or_null(d.partition)},
                    {"offset", or_null(d.offset)},
                    {"outcome", d.outcome}});
      hops_.timed.push_back({{"at", d.at},
                             {"hop", "delivered"},
                             {"consumer", name},
                             {"event_id", e.event_id},
                             {"partition", or_null(d.partition)},
                             {"offset", or_null(d.offset)},
                             {"outcome", d.outcome},
                             {"text", delivery_text(d, name)}});
    }
    return ds;
  }

  json effect_hops(const traced_event& e, const std::string& name,
                   const traced_consumer& c) {
    json fx = json::array();
    for (auto& f : c.effects) {
      fx.push_back(
        {{"at", f.at}, {"kind", f.kind}, {"amount_cents", f.amount_cents}});
      hops_.timed.push_back(
        {{"at", f.at},
         {"hop", "effect"},
         {"consumer", name},
         {"event_id", e.event_id},
         {"text",
          name + " business change: " + f.kind +
            (f.amount_cents ? " (" + std::to_string(f.amount_cents) + " cents)"
                            : std::string{})}});
    }
    return fx;
  }

  json dlq_entry(const traced_event& e, const std::string& name,
                 const traced_consumer& c) {
    if (!c.dlq)
      return nullptr;
    auto& d = *c.dlq;
    if (d.status == "replayed" && !d.resolved_at.empty())
      hops_.timed.push_back(
        {{"at", d.resolved_at},
         {"hop", "replayed"},
         {"consumer", name},
         {"event_id", e.event_id},
         {"text", "DLQ entry " + std::to_string(d.id) +
                    " was replayed: published again with the same "
                    "event ID"}});
    return {{"id", d.id},
            {"status", d.status},
            {"attempts", d.attempts},
            {"error_class", d.error_class},
            {"parked_at", d.parked_at},
            {"resolved_at", or_null(d.resolved_at)}};
  }

  const committed_offsets& offsets_;
  trace_hops& hops_;
};

} // namespace

consumer_part trace_consumer(const traced_event& e, const std::string& name,
                             const traced_consumer& c,
                             const committed_offsets& offsets,
                             trace_hops& hops) {
  return consumer_tracer(offsets, hops).part(e, name, c);
}

} // namespace ef::app
