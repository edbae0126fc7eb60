#include "app/page/ops_view.hpp"
#include <eventforge/messages/dlq_messages.hpp>

#include "actors/consumer_operations.hpp"
#include "kafka/offsets.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

namespace ef::app {

ops_view read_ops_view(const config::settings& cfg, const std::string& dsn,
                       const std::string& brokers,
                       std::chrono::milliseconds broker_wait) {
  ops_view v;
  try {
    v.rows = persistence::read_ops_rows(dsn);
    v.repair = persistence::repair_store(dsn).summary();
    persistence::consumer_controls controls(dsn);
    auto rows = controls.controls();
    for (auto& name : cfg.consumer.enabled) {
      ops_view::consumer_members c{name, {name, false, "", ""}, {}};
      for (auto& r : rows)
        if (r.consumer == name)
          c.control = r;
      c.members = controls.members(name, consumer_operations::member_window_s);
      v.consumers.push_back(std::move(c));
    }
  } catch (const std::exception& e) {
    v.database_not_read = e.what();
  }
  if (brokers.empty()) {
    v.broker_not_read = "no --kafka.brokers given";
    v.no_broker_given = true;
    return v;
  }
  // On a thread of its own, waited for at most broker_wait: librdkafka
  // 2.0.2 can hang past its timeouts once its broker went away. The
  // thread owns what it uses.
  struct read {
    std::mutex mtx;
    std::condition_variable cv;
    bool done = false;
    lag_by_consumer lag;
    std::string error;
  };
  auto r = std::make_shared<read>();
  auto timeout_ms = static_cast<int>(broker_wait.count());
  std::thread([r, cfg, brokers, timeout_ms] {
    lag_by_consumer lag;
    std::string error;
    try {
      kafka::offset_reader broker(kafka::cluster_of(cfg, brokers));
      lag = read_lag(cfg, broker, std::max(500, timeout_ms - 500));
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::lock_guard<std::mutex> guard{r->mtx};
    r->lag = std::move(lag);
    r->error = std::move(error);
    r->done = true;
    r->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock{r->mtx};
  if (!r->cv.wait_for(lock, broker_wait, [&] { return r->done; }))
    v.broker_not_read = "the broker did not answer within " +
                        std::to_string(broker_wait.count()) + " ms";
  else if (!r->error.empty())
    v.broker_not_read = r->error;
  else
    v.lag = std::move(r->lag);
  return v;
}

namespace {

void member_lines(std::ostream& out, const ops_view& v) {
  for (auto& c : v.consumers) {
    out << "consumer " << c.consumer << ": ";
    if (c.control.paused)
      out << "PAUSED by " << c.control.changed_by << " at "
          << c.control.changed_at;
    else
      out << "running";
    out << "; members:";
    if (c.members.empty())
      out << " none";
    for (auto& m : c.members) {
      out << " " << m.node << " ";
      if (m.state == "paused") {
        out << "(paused)";
        continue;
      }
      out << "[";
      for (size_t i = 0; i < m.partitions.size(); ++i)
        out << (i ? "," : "") << m.partitions[i];
      out << "]";
    }
    out << "\n";
  }
}

void lag_lines(std::ostream& out, const lag_by_consumer& lag) {
  for (auto& [consumer, parts] : lag) {
    long long total = 0;
    for (auto& p : parts)
      total += p.lag;
    out << "consumer " << consumer << ": lag " << total << " (";
    for (size_t i = 0; i < parts.size(); ++i)
      out << (i ? ", " : "") << "p" << parts[i].partition << " "
          << parts[i].lag;
    out << ")\n";
  }
}

} // namespace

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
  // The database's part first: it is what can still be read when the
  // brokers are down.
  if (!v.database_not_read.empty()) {
    out << "database: not read (" << v.database_not_read << ")\n";
    if (!v.broker_not_read.empty())
      out << "consumer lag: not read (" << v.broker_not_read << ")\n";
    else
      lag_lines(out, v.lag);
    return out.str();
  }
  out << "outbox: " << v.rows.outbox_unsent << " unsent, oldest "
      << static_cast<long>(v.rows.outbox_oldest_unsent_age_s) << " s\n";
  out << "relay shards:";
  for (int s = 0; s < cfg.relay.shards; ++s) {
    auto i = v.rows.shard_owners.find(s);
    out << " " << s << "="
        << (i == v.rows.shard_owners.end() ? "UNOWNED" : i->second);
  }
  out << "\n";
  member_lines(out, v);
  if (!v.broker_not_read.empty())
    out << "consumer lag: not read (" << v.broker_not_read << ")\n";
  lag_lines(out, v.lag);
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
