#include "app/tools/fault_schedule.hpp"

#include <algorithm>
#include <random>

namespace ef::app {

namespace {

/// Retriable refusals a real cluster gives for each request type the
/// pipeline makes, as (request type, error).
const std::pair<const char*, const char*> retriable[] = {
  {"produce", "NOT_LEADER_FOR_PARTITION"},
  {"produce", "REQUEST_TIMED_OUT"},
  {"fetch", "NOT_LEADER_FOR_PARTITION"},
  {"list-offsets", "NOT_LEADER_FOR_PARTITION"},
  {"metadata", "LEADER_NOT_AVAILABLE"},
  {"offset-commit", "COORDINATOR_NOT_AVAILABLE"},
  {"offset-commit", "NOT_COORDINATOR"},
  {"offset-fetch", "COORDINATOR_LOAD_IN_PROGRESS"},
  {"find-coordinator", "COORDINATOR_NOT_AVAILABLE"},
  {"join-group", "COORDINATOR_LOAD_IN_PROGRESS"},
  {"sync-group", "COORDINATOR_NOT_AVAILABLE"},
  {"heartbeat", "COORDINATOR_NOT_AVAILABLE"},
};

} // namespace

const std::vector<std::string>& broker_fault_kinds() {
  static const std::vector<std::string> kinds{"leader", "down", "rtt", "errors",
                                              "coordinator"};
  return kinds;
}

std::optional<std::string> expand_fault_kinds(std::vector<std::string>& kinds,
                                              int brokers) {
  auto& known = broker_fault_kinds();
  if (std::find(kinds.begin(), kinds.end(), "all") != kinds.end())
    kinds = known;
  for (auto& k : kinds) {
    if (std::find(known.begin(), known.end(), k) == known.end())
      return "unknown broker fault \"" + k +
             "\"; one of leader, down, rtt, errors, coordinator, or all";
    // With one broker, a leader or coordinator has nowhere to go and a
    // broker down is the whole cluster down (--broker-restarts covers it).
    if (brokers < 2 && (k == "leader" || k == "down" || k == "coordinator"))
      return "broker fault " + k +
             " needs kafka.embedded-brokers >= 2 (3 as a real cluster)";
  }
  return std::nullopt;
}

std::vector<scheduled_fault>
plan_broker_faults(std::uint64_t seed, const std::vector<std::string>& kinds,
                   int count, long orders, const fault_target& target) {
  std::vector<scheduled_fault> out;
  if (kinds.empty() || count <= 0)
    return out;
  // A stream of its own: the crash points' decisions stay as they were.
  std::mt19937_64 rng(seed ^ 0x6b61666b61666c74ULL);
  auto pick = [&](int n) {
    return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng));
  };
  for (int i = 0; i < count; ++i) {
    scheduled_fault s;
    s.at_order = orders * (i + 1) / (count + 1);
    s.kind = kinds[static_cast<size_t>(i) % kinds.size()];
    auto& f = s.fault;
    int broker = pick(target.brokers) + 1;
    if (s.kind == "leader") {
      f.what = kafka::broker_fault::kind::leader;
      f.topic = target.topic;
      f.partition = pick(target.partitions);
      f.broker = broker;
    } else if (s.kind == "down") {
      f.what = kafka::broker_fault::kind::down;
      f.broker = broker;
      kafka::broker_fault up;
      up.what = kafka::broker_fault::kind::up;
      up.broker = broker;
      s.undo = up;
      s.hold_ms = 3000;
    } else if (s.kind == "rtt") {
      f.what = kafka::broker_fault::kind::rtt;
      f.broker = broker;
      f.rtt_ms = 100 + 100 * pick(5);
      auto fast = f;
      fast.rtt_ms = 0;
      s.undo = fast;
      s.hold_ms = 2000;
    } else if (s.kind == "errors") {
      auto& [api, error] = retriable[pick(std::size(retriable))];
      f.what = kafka::broker_fault::kind::errors;
      f.api = api;
      f.error = error;
      f.count = 1 + pick(5);
    } else {
      f.what = kafka::broker_fault::kind::coordinator;
      f.group = target.groups.empty()
                  ? std::string("eventforge.dlq")
                  : target.groups[pick(static_cast<int>(target.groups.size()))];
      f.broker = broker;
    }
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace ef::app
