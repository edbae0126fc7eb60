#include <eventforge/embedded/verifier.hpp>

#include "persistence/invariant_queries.hpp"

#include "kafka/event_record.hpp"
#include "kafka/offsets.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace ef::app {

verification verify(const config::settings& cfg, const std::string& dsn,
                    const std::string& brokers) {
  verification v;
  auto cluster = kafka::cluster_of(cfg, brokers);
  auto& consumers = cfg.consumer.enabled;
  v.violations = persistence::check_database(dsn, consumers, v.counts);
  // I5: below each group's committed offset, every record must have its DB
  // decision (the consumer's mark). Read offsets before marks: marks only
  // grow, so a record counted as committed here is checked conservatively.
  auto& topic = cfg.kafka.topic;
  auto parts = cfg.kafka.partitions;
  auto read_committed = [&] {
    std::map<std::string, std::vector<std::int64_t>> now;
    for (auto& c : consumers)
      now[c] =
        kafka::committed_offsets(cluster, "eventforge." + c, topic, parts);
    return now;
  };
  auto committed = read_committed();
  auto records = kafka::read_all(cluster, topic, parts);
  auto marks = persistence::processed_marks(dsn);
  v.records = static_cast<long>(records.size());
  std::set<std::string> seen;
  std::vector<std::int64_t> ends(parts, 0);
  for (auto& r : records) {
    ends[r.partition] = std::max(ends[r.partition], r.offset + 1);
    std::string error;
    auto ev = kafka::decode_value(r.value, r.key, error);
    auto event_id = ev ? ev->event_id : r.event_id;
    if (!event_id.empty() && !seen.insert(event_id).second)
      ++v.duplicates;
    for (auto& c : consumers) {
      if (r.offset >= committed[c][r.partition])
        continue;
      if (!ev) {
        v.violations.push_back(
          {"I5",
           "record " + std::to_string(r.partition) + "/" +
             std::to_string(r.offset) +
             " is below the committed offset but undecodable (" + error +
             "): no DB decision exists",
           r.key, r.event_id, c});
      } else if (marks.count({c, ev->event_id}) == 0) {
        v.violations.push_back({"I5",
                                "record " + std::to_string(r.partition) + "/" +
                                  std::to_string(r.offset) +
                                  " is below the committed offset but was "
                                  "never applied",
                                ev->order_id, ev->event_id, c});
      }
    }
  }
  // Offsets follow the marks: a gap that is still closing is not yet a
  // violation. Read them again while they move (bounded).
  auto lagging = [&] {
    for (auto& c : consumers)
      for (int p = 0; p < parts; ++p)
        if (ends[p] > 0 && committed[c][p] < ends[p])
          return true;
    return false;
  };
  using clock = std::chrono::steady_clock;
  auto give_up = clock::now() + std::chrono::seconds(5);
  auto last_change = clock::now();
  while (lagging() && clock::now() < give_up &&
         clock::now() - last_change < std::chrono::milliseconds(500)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto now = read_committed();
    if (now != committed) {
      committed = std::move(now);
      last_change = clock::now();
    }
  }
  for (auto& c : consumers)
    for (int p = 0; p < parts; ++p)
      if (ends[p] > 0 && committed[c][p] < ends[p])
        v.violations.push_back({"drain",
                                "partition " + std::to_string(p) +
                                  " committed at " +
                                  std::to_string(committed[c][p]) +
                                  ", log end " + std::to_string(ends[p]),
                                "", "", c});

  // Did anything move while we read? Then the checks above mixed states.
  std::ostringstream moved;
  auto note = [&](const std::string& what, long before, long after) {
    if (before != after)
      moved << (moved.tellp() > 0 ? ", " : "") << what << " " << before
            << " -> " << after;
  };
  auto again = persistence::read_counts(dsn);
  note("orders", v.counts.orders, again.orders);
  note("outbox events", v.counts.events, again.events);
  note("unsent", v.counts.unsent, again.unsent);
  note("marks", v.counts.marks, again.marks);
  note("effects", v.counts.effects, again.effects);
  auto ends_again = kafka::log_end_offsets(cluster, topic, parts);
  for (int p = 0; p < parts; ++p)
    if (ends[p] > 0 || ends_again[p] > 0)
      note("log end of partition " + std::to_string(p), ends[p], ends_again[p]);
  auto committed_again = read_committed();
  for (auto& c : consumers)
    for (int p = 0; p < parts; ++p)
      note(c + "'s offset of partition " + std::to_string(p), committed[c][p],
           committed_again[c][p]);
  v.moving = moved.str();
  return v;
}

std::string to_text(const verification& v, size_t max_listed) {
  std::ostringstream out;
  out << "orders " << v.counts.orders << ", outbox events " << v.counts.events
      << " (unsent " << v.counts.unsent << "), topic records " << v.records
      << " (duplicates " << v.duplicates << "), marks " << v.counts.marks
      << ", effects " << v.counts.effects << "\n";
  if (!v.moving.empty())
    out << "read a moving target (" << v.moving
        << "): the result mixes states; wait until everything is applied "
           "(ef::await_applied) and verify again\n";
  if (v.ok()) {
    out << "all invariants hold (I1-I5, drained)\n";
    return out.str();
  }
  if (v.violations.empty())
    return out.str();
  out << v.violations.size() << " violation(s):\n";
  for (size_t i = 0; i < v.violations.size() && i < max_listed; ++i) {
    auto& x = v.violations[i];
    out << "  " << x.invariant << ": " << x.what;
    if (!x.consumer.empty())
      out << " consumer=" << x.consumer;
    if (!x.order_id.empty())
      out << " order=" << x.order_id;
    if (!x.event_id.empty())
      out << " event=" << x.event_id;
    out << "\n";
  }
  if (v.violations.size() > max_listed)
    out << "  ... and " << v.violations.size() - max_listed << " more\n";
  return out.str();
}

std::string to_json(const verification& v) {
  nlohmann::json j;
  j["orders"] = v.counts.orders;
  j["events"] = v.counts.events;
  j["unsent"] = v.counts.unsent;
  j["marks"] = v.counts.marks;
  j["effects"] = v.counts.effects;
  j["records"] = v.records;
  j["duplicate_records"] = v.duplicates;
  j["ok"] = v.ok();
  j["moving"] = v.moving;
  j["violations"] = nlohmann::json::array();
  for (auto& x : v.violations)
    j["violations"].push_back({{"invariant", x.invariant},
                               {"what", x.what},
                               {"order_id", x.order_id},
                               {"event_id", x.event_id},
                               {"consumer", x.consumer}});
  return j.dump(2);
}

} // namespace ef::app
