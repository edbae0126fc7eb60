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

namespace {

using committed_map = std::map<std::string, std::vector<std::int64_t>>;

/// Each enabled consumer's group's committed offsets, per partition.
committed_map read_committed(const kafka::connection& cluster,
                             const config::settings& cfg) {
  committed_map now;
  for (auto& c : cfg.consumer.enabled)
    now[c] = kafka::committed_offsets(cluster, "eventforge." + c,
                                      cfg.kafka.topic, cfg.kafka.partitions);
  return now;
}

/// I5: below each group's committed offset, every record must have its DB
/// decision (the consumer's mark). Also counts the records and the
/// duplicate event IDs; returns the log end of each partition.
std::vector<std::int64_t>
check_records(const std::vector<kafka::stored_record>& records,
              const committed_map& committed,
              const std::set<std::pair<std::string, std::string>>& marks,
              const config::settings& cfg, verification& v) {
  v.records = static_cast<long>(records.size());
  std::set<std::string> seen;
  std::vector<std::int64_t> ends(cfg.kafka.partitions, 0);
  for (auto& r : records) {
    ends[r.partition] = std::max(ends[r.partition], r.offset + 1);
    std::string error;
    auto ev = kafka::decode_value(r.value, r.key, error);
    auto event_id = ev ? ev->event_id : r.event_id;
    if (!event_id.empty() && !seen.insert(event_id).second)
      ++v.duplicates;
    for (auto& c : cfg.consumer.enabled) {
      if (r.offset >= committed.at(c)[r.partition])
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
  return ends;
}

bool lagging(const committed_map& committed,
             const std::vector<std::int64_t>& ends) {
  for (auto& [c, offsets] : committed)
    for (size_t p = 0; p < ends.size(); ++p)
      if (ends[p] > 0 && offsets[p] < ends[p])
        return true;
  return false;
}

/// Offsets follow the marks: a gap that is still closing is not yet a
/// violation. Reads them again while they move (bounded: 5 s, or 500 ms
/// without a change), then reports every partition not drained.
void check_drained(const kafka::connection& cluster,
                   const config::settings& cfg,
                   const std::vector<std::int64_t>& ends,
                   committed_map& committed, verification& v) {
  using clock = std::chrono::steady_clock;
  auto give_up = clock::now() + std::chrono::seconds(5);
  auto last_change = clock::now();
  while (lagging(committed, ends) && clock::now() < give_up &&
         clock::now() - last_change < std::chrono::milliseconds(500)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto now = read_committed(cluster, cfg);
    if (now != committed) {
      committed = std::move(now);
      last_change = clock::now();
    }
  }
  for (auto& c : cfg.consumer.enabled)
    for (int p = 0; p < cfg.kafka.partitions; ++p)
      if (ends[p] > 0 && committed[c][p] < ends[p])
        v.violations.push_back({"drain",
                                "partition " + std::to_string(p) +
                                  " committed at " +
                                  std::to_string(committed[c][p]) +
                                  ", log end " + std::to_string(ends[p]),
                                "", "", c});
}

/// What moved while the checks read (counts, log ends, offsets): then they
/// mixed states. "" if nothing did.
std::string what_moved(const kafka::connection& cluster,
                       const config::settings& cfg, const std::string& dsn,
                       const verification& v,
                       const std::vector<std::int64_t>& ends,
                       const committed_map& committed) {
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
  auto parts = cfg.kafka.partitions;
  auto ends_again = kafka::log_end_offsets(cluster, cfg.kafka.topic, parts);
  for (int p = 0; p < parts; ++p)
    if (ends[p] > 0 || ends_again[p] > 0)
      note("log end of partition " + std::to_string(p), ends[p], ends_again[p]);
  auto committed_again = read_committed(cluster, cfg);
  for (auto& c : cfg.consumer.enabled)
    for (int p = 0; p < parts; ++p)
      note(c + "'s offset of partition " + std::to_string(p),
           committed.at(c)[p], committed_again[c][p]);
  return moved.str();
}

} // namespace

verification verify(const config::settings& cfg, const std::string& dsn,
                    const std::string& brokers) {
  verification v;
  auto cluster = kafka::cluster_of(cfg, brokers);
  v.violations =
    persistence::check_database(dsn, cfg.consumer.enabled, v.counts);
  // Offsets before marks: marks only grow, so a record counted as
  // committed here is checked conservatively.
  auto committed = read_committed(cluster, cfg);
  auto records =
    kafka::read_all(cluster, cfg.kafka.topic, cfg.kafka.partitions);
  auto marks = persistence::processed_marks(dsn);
  auto ends = check_records(records, committed, marks, cfg, v);
  check_drained(cluster, cfg, ends, committed, v);
  v.moving = what_moved(cluster, cfg, dsn, v, ends, committed);
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
