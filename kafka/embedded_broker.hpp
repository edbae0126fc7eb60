#pragma once

#include "kafka/broker_fault.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct rd_kafka_mock_cluster_s;

namespace ef::kafka {

/// An in-process cluster that speaks the real Kafka protocol (librdkafka's
/// mock cluster). Brokers bind random loopback ports; clients in this or any
/// other process reach it through bootstrap_servers(). Its log lives in
/// memory and dies with this object.
class embedded_broker {
public:
  struct topic_spec {
    std::string name;
    int partitions;
  };

  /// What each partition's log holds before its oldest records go
  /// (librdkafka 2.0.2's mock cluster: 5 MiB, fixed), as retention.bytes
  /// would. The mock cluster does not answer DescribeConfigs.
  static constexpr std::int64_t log_bytes_per_partition = 5 * 1024 * 1024;

  embedded_broker(int brokers, const std::vector<topic_spec>& topics);
  ~embedded_broker();

  embedded_broker(const embedded_broker&) = delete;
  embedded_broker& operator=(const embedded_broker&) = delete;

  /// "127.0.0.1:p1,127.0.0.1:p2,..."
  std::string bootstrap_servers() const;

  /// Takes all brokers down (true) or brings them back (false): the clients'
  /// connections fail as in a real outage.
  void set_down(bool down);

  /// Brokers in the cluster (ids 1..brokers()).
  int brokers() const;

  /// Applies a fault and says what it did ("broker 2 down; leaders moved:
  /// orders/1 -> 3, orders/4 -> 1"). Throws std::invalid_argument naming
  /// what does not exist (broker 4 of 3, an unknown topic or partition),
  /// and then has changed nothing. Thread-safe.
  std::string apply(const broker_fault& fault);

  /// Parses a fault command (parse_fault), applies it and answers in one
  /// line: "fault ok: <what it did>" or "fault error: <why>"; an error
  /// changes nothing. The standalone broker's stdin and the recovery page's
  /// Kafka scenarios speak this.
  std::string run_command(const std::string& line);

  /// The leader of every partition of `topic`, by partition (empty for an
  /// unknown topic).
  std::vector<int> leaders(const std::string& topic) const;

  /// The underlying mock cluster, for fault injection in tests
  /// (rd_kafka_mock_push_request_errors and friends).
  rd_kafka_mock_cluster_s* mock_cluster() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ef::kafka
