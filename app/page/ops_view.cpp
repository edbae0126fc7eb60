#include "app/page/ops_view.hpp"
#include <eventforge/messages/dlq_messages.hpp>

#include "kafka/offsets.hpp"

#include <nlohmann/json.hpp>

#include <sstream>

namespace ef::app {

ops_view read_ops_view(const config::settings& cfg, const std::string& dsn,
                       const std::string& brokers) {
  ops_view v;
  v.rows = persistence::read_ops_rows(dsn);
  v.repair = persistence::repair_store(dsn).summary();
  if (brokers.empty()) {
    v.broker_not_read = "no --kafka.brokers given";
    return v;
  }
  kafka::offset_reader broker(kafka::cluster_of(cfg, brokers));
  v.lag = read_lag(cfg, broker, 10000);
  return v;
}

std::string repair_json(const persistence::repair_summary& r) {
  auto gaps = nlohmann::json::array();
  for (auto& g : r.recent)
    gaps.push_back({{"consumer", g.consumer},
                    {"partition", g.partition},
                    {"from_offset", g.from_offset},
                    {"to_offset", g.to_offset},
                    {"at_risk", g.at_risk},
                    {"age_seconds", g.age_seconds}});
  return nlohmann::json{{"broker_epoch", r.epoch},
                        {"consumer_gaps", r.gaps},
                        {"republished_events", r.republished_total},
                        {"recent_gaps", gaps}}
    .dump();
}

std::string to_text(const ops_view& v, const config::settings& cfg) {
  std::ostringstream out;
  out << "outbox: " << v.rows.outbox_unsent << " unsent, oldest "
      << static_cast<long>(v.rows.outbox_oldest_unsent_age_s) << " s\n";
  out << "relay shards:";
  for (int s = 0; s < cfg.relay.shards; ++s) {
    auto i = v.rows.shard_owners.find(s);
    out << " " << s << "="
        << (i == v.rows.shard_owners.end() ? "UNOWNED" : i->second);
  }
  out << "\n";
  if (!v.broker_not_read.empty())
    out << "consumer lag: not read (" << v.broker_not_read << ")\n";
  for (auto& [consumer, parts] : v.lag) {
    long long total = 0;
    for (auto& p : parts)
      total += p.lag;
    out << "consumer " << consumer << ": lag " << total << " (";
    for (size_t i = 0; i < parts.size(); ++i)
      out << (i ? ", " : "") << "p" << parts[i].partition << " "
          << parts[i].lag;
    out << ")\n";
  }
  auto count = [&](const char* s) {
    auto i = v.rows.dlq_by_status.find(s);
    return i == v.rows.dlq_by_status.end() ? 0L : i->second;
  };
  out << "dlq: " << count(dlq_status::parked) << " parked (oldest "
      << static_cast<long>(v.rows.dlq_oldest_parked_age_s) << " s), "
      << count(dlq_status::replaying) << " replaying, "
      << count(dlq_status::replayed) << " replayed, "
      << count(dlq_status::discarded) << " discarded\n";
  out << "broker epoch " << v.repair.epoch << "; consumer gaps "
      << v.repair.gaps << "; events republished " << v.repair.republished_total
      << "\n";
  for (auto& g : v.repair.recent)
    out << "  gap: " << g.consumer << " partition " << g.partition
        << " offsets " << g.from_offset << ".." << g.to_offset << ", "
        << g.at_risk << " event(s) at risk queued again, "
        << static_cast<long>(g.age_seconds) << " s ago\n";
  return out.str();
}

} // namespace ef::app
