#include "kafka/embedded_broker.hpp"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

namespace ef::kafka {

struct embedded_broker::impl {
  rd_kafka_t* rk = nullptr;
  rd_kafka_mock_cluster_t* mc = nullptr;
  int brokers = 0;
  /// What the mock cluster cannot be asked: who leads each partition (set
  /// explicitly at creation) and which brokers are down.
  mutable std::mutex mtx;
  std::map<std::string, std::vector<int>> leaders;
  std::set<int> down;

  void check_broker(int id) const {
    if (id < 1 || id > brokers)
      throw std::invalid_argument("no broker " + std::to_string(id) +
                                  ": the cluster has brokers 1 to " +
                                  std::to_string(brokers));
  }

  void set_leader(const std::string& topic, int partition, int id) {
    auto rc =
      rd_kafka_mock_partition_set_leader(mc, topic.c_str(), partition, id);
    if (rc != RD_KAFKA_RESP_ERR_NO_ERROR)
      throw std::runtime_error("cannot move the leader of " + topic + "/" +
                               std::to_string(partition) + ": " +
                               rd_kafka_err2str(rc));
    leaders[topic][partition] = id;
  }

  /// The next broker after `id` that is up (id itself if none is).
  int next_up(int id) const {
    for (int step = 1; step < brokers; ++step) {
      int candidate = (id - 1 + step) % brokers + 1;
      if (down.count(candidate) == 0)
        return candidate;
    }
    return id;
  }

  /// Takes broker `id` down. A real cluster's controller elects new leaders
  /// for the partitions the broker led (the mock cluster does not): the
  /// next broker that is up.
  std::string take_down(int id) {
    check_broker(id);
    rd_kafka_mock_broker_set_down(mc, id);
    down.insert(id);
    std::string moved;
    int to = next_up(id);
    if (to != id)
      for (auto& [topic, by_partition] : leaders)
        for (size_t p = 0; p < by_partition.size(); ++p)
          if (by_partition[p] == id) {
            set_leader(topic, static_cast<int>(p), to);
            moved += (moved.empty() ? "" : ", ") + topic + "/" +
                     std::to_string(p) + " -> " + std::to_string(to);
          }
    return "broker " + std::to_string(id) +
           " down; leaders moved: " + (moved.empty() ? "none" : moved);
  }

  /// Moves the leader of topic/partition to broker `id` (0: the next one
  /// up after the current leader).
  std::string move_leader(const std::string& topic, int partition, int id) {
    if (id != 0)
      check_broker(id);
    auto i = leaders.find(topic);
    if (i == leaders.end())
      throw std::invalid_argument("no topic \"" + topic + "\"");
    if (partition >= static_cast<int>(i->second.size()))
      throw std::invalid_argument("no partition " + std::to_string(partition) +
                                  " of " + topic + ": it has " +
                                  std::to_string(i->second.size()));
    int from = i->second[partition];
    int to = id == 0 ? next_up(from) : id;
    set_leader(topic, partition, to);
    return "leader of " + topic + "/" + std::to_string(partition) +
           " moved from broker " + std::to_string(from) + " to " +
           std::to_string(to);
  }
};

embedded_broker::embedded_broker(int brokers,
                                 const std::vector<topic_spec>& topics)
    : impl_(std::make_unique<impl>()) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log.connection.close", "false", err, sizeof(err));
  // The host instance never connects anywhere; silence its notice about
  // having no bootstrap servers.
  rd_kafka_conf_set(conf, "log_level", "4", err, sizeof(err));
  // The mock cluster needs a host client instance to run on.
  impl_->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (impl_->rk == nullptr)
    throw std::runtime_error(std::string("embedded broker: ") + err);
  impl_->mc = rd_kafka_mock_cluster_new(impl_->rk, brokers);
  if (impl_->mc == nullptr) {
    rd_kafka_destroy(impl_->rk);
    throw std::runtime_error("embedded broker: cannot create mock cluster");
  }
  impl_->brokers = brokers;
  int replication = brokers < 3 ? brokers : 3;
  for (auto& t : topics) {
    auto rc = rd_kafka_mock_topic_create(impl_->mc, t.name.c_str(),
                                         t.partitions, replication);
    // Leaders spread as a real cluster spreads them, and known to us.
    for (int p = 0; rc == RD_KAFKA_RESP_ERR_NO_ERROR && p < t.partitions; ++p) {
      rc = rd_kafka_mock_partition_set_leader(impl_->mc, t.name.c_str(), p,
                                              p % brokers + 1);
      impl_->leaders[t.name].push_back(p % brokers + 1);
    }
    if (rc != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // A destructor does not run for a constructor that throws: stop the
      // cluster's threads here, or they outlive the failure.
      rd_kafka_mock_cluster_destroy(impl_->mc);
      rd_kafka_destroy(impl_->rk);
      throw std::runtime_error("embedded broker: cannot create topic " +
                               t.name + ": " + rd_kafka_err2str(rc));
    }
  }
}

embedded_broker::~embedded_broker() {
  if (impl_->mc)
    rd_kafka_mock_cluster_destroy(impl_->mc);
  if (impl_->rk)
    rd_kafka_destroy(impl_->rk);
}

std::string embedded_broker::bootstrap_servers() const {
  return rd_kafka_mock_cluster_bootstraps(impl_->mc);
}

void embedded_broker::set_down(bool down) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  for (int id = 1; id <= impl_->brokers; ++id) {
    if (down) {
      rd_kafka_mock_broker_set_down(impl_->mc, id);
      impl_->down.insert(id);
    } else {
      rd_kafka_mock_broker_set_up(impl_->mc, id);
      impl_->down.erase(id);
    }
  }
}

int embedded_broker::brokers() const {
  return impl_->brokers;
}

std::string embedded_broker::run_command(const std::string& line) {
  auto parsed = parse_fault(line);
  if (auto* why = std::get_if<std::string>(&parsed))
    return "fault error: " + *why;
  try {
    return "fault ok: " + apply(std::get<broker_fault>(parsed));
  } catch (const std::exception& e) {
    return "fault error: " + std::string(e.what());
  }
}

std::vector<int> embedded_broker::leaders(const std::string& topic) const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto i = impl_->leaders.find(topic);
  return i == impl_->leaders.end() ? std::vector<int>{} : i->second;
}

std::string embedded_broker::apply(const broker_fault& f) {
  using k = broker_fault::kind;
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto& m = *impl_;
  auto n = std::to_string(f.broker);
  switch (f.what) {
  case k::down:
    return m.take_down(f.broker);
  case k::up:
    m.check_broker(f.broker);
    rd_kafka_mock_broker_set_up(m.mc, f.broker);
    m.down.erase(f.broker);
    return "broker " + n + " up";
  case k::leader:
    return m.move_leader(f.topic, f.partition, f.broker);
  case k::rtt:
    m.check_broker(f.broker);
    rd_kafka_mock_broker_set_rtt(m.mc, f.broker, f.rtt_ms);
    return "broker " + n + " answers after " + std::to_string(f.rtt_ms) + " ms";
  case k::errors: {
    auto key = api_key_of(f.api);
    auto code = error_code_of(f.error);
    if (key < 0 || code < 0)
      throw std::invalid_argument("unknown request type or error: " +
                                  to_string(f));
    std::vector<rd_kafka_resp_err_t> errs(
      static_cast<size_t>(f.count), static_cast<rd_kafka_resp_err_t>(code));
    rd_kafka_mock_push_request_errors_array(m.mc, static_cast<int16_t>(key),
                                            errs.size(), errs.data());
    return "the next " + std::to_string(f.count) + " " + f.api +
           " request(s) fail with " + f.error;
  }
  case k::coordinator:
    m.check_broker(f.broker);
    rd_kafka_mock_coordinator_set(m.mc, "group", f.group.c_str(), f.broker);
    return "coordinator of group " + f.group + " is broker " + n;
  case k::clear:
    for (int id = 1; id <= m.brokers; ++id) {
      rd_kafka_mock_broker_set_up(m.mc, id);
      rd_kafka_mock_broker_set_rtt(m.mc, id, 0);
    }
    m.down.clear();
    for (auto& name : fault_apis())
      rd_kafka_mock_clear_request_errors(
        m.mc, static_cast<int16_t>(api_key_of(name)));
    return "every broker up, no delay, no pending errors";
  case k::status: {
    std::string down;
    for (int id : m.down)
      down += (down.empty() ? "" : ", ") + std::to_string(id);
    return "brokers " + std::to_string(m.brokers) +
           "; down: " + (down.empty() ? "none" : down);
  }
  }
  return "nothing";
}

rd_kafka_mock_cluster_s* embedded_broker::mock_cluster() const {
  return impl_->mc;
}

} // namespace ef::kafka
