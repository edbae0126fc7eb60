#pragma once

#include "kafka/broker_fault.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ef::app {

/// One Kafka fault of a chaos run: applied once `at_order` orders were
/// created; `undo` (if any) follows after `hold_ms` (a broker back up, its
/// delay gone).
struct scheduled_fault {
  long at_order = 0;
  std::string kind; ///< leader, down, rtt, errors or coordinator
  kafka::broker_fault fault;
  std::optional<kafka::broker_fault> undo;
  int hold_ms = 0;
};

/// The fault kinds `eventforge chaos --broker-faults` takes.
const std::vector<std::string>& broker_fault_kinds();

/// What the cluster being failed looks like.
struct fault_target {
  int brokers = 3;
  std::string topic = "orders";
  int partitions = 6;
  std::vector<std::string> groups; ///< the consumer groups to move
};

/// Checks a --broker-faults list ("all" or kinds of broker_fault_kinds()),
/// expanding "all"; the first problem in words naming it, or nothing.
std::optional<std::string> expand_fault_kinds(std::vector<std::string>& kinds,
                                              int brokers);

/// `count` faults of `kinds`, in turn, at evenly spaced points of `orders`,
/// each one's details (partition, broker, request type, error, count) drawn
/// from `seed`: the same arguments give the same list, so a run replays.
std::vector<scheduled_fault>
plan_broker_faults(std::uint64_t seed, const std::vector<std::string>& kinds,
                   int count, long orders, const fault_target& target);

} // namespace ef::app
