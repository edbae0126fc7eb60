#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

// What librdkafka says about each client of this process, kept for the
// operator's signals: its statistics (statistics.interval.ms), its errors
// and its log lines. make_conf attaches the callbacks to every client
// (client_events.hpp); the kafka health sampler turns what is kept here
// into series, and /readyz and `status` read it. librdkafka retries inside
// its delivery timeout, so an outage shows here (a broker's connection
// down, requests waiting, records queued) long before a publish fails.

namespace ef::kafka {

/// One broker connection of one client, as its last statistics gave it.
struct broker_view {
  std::int32_t id = -1;         ///< node id; -1 for the group coordinator link
  std::string address;          ///< host:port, as the cluster's metadata says
  std::string state;            ///< librdkafka's: UP, DOWN, CONNECT, INIT, ...
  double rtt_seconds = 0;       ///< average round trip over the last interval
  std::int64_t outstanding = 0; ///< requests waiting to be sent or answered
  std::uint64_t errors = 0;     ///< request errors and timeouts, cumulative
  std::uint64_t retries = 0;    ///< requests retried, cumulative
  /// Not connected and not trying (librdkafka connects to a broker only
  /// while it needs it, and goes back to INIT after a failure it no longer
  /// needs to retry): says nothing of the broker.
  bool idle() const { return state == "INIT"; }
  bool up() const { return state == "UP"; }
};

/// One client's last statistics.
struct client_view {
  /// Its role: client.id without a trailing "-<number>" (eventforge-relay,
  /// eventforge.billing, eventforge-dlq-billing, ...). Never an ID.
  std::string role;
  std::string type; ///< producer or consumer
  std::chrono::steady_clock::time_point at;
  std::vector<broker_view> brokers; ///< by node id; the coordinator as -1
  // A producer's:
  std::int64_t undelivered = 0;     ///< records without a delivery report yet
  double queue_latency_seconds = 0; ///< p99 of the time records queue
  // A group member's:
  bool in_group = false;        ///< it has a consumer group
  std::string group_state;      ///< librdkafka's cgrp state ("up", ...)
  std::uint64_t rebalances = 0; ///< cumulative
  std::int64_t assigned = 0;    ///< partitions assigned now
  bool coordinator_up = false;  ///< its coordinator connection is UP
  /// Lag per assigned partition: the log end it last saw minus its
  /// committed offset (librdkafka's consumer_lag; absent where unknown).
  std::map<std::int32_t, std::int64_t> lag;
};

/// What changed since the last take(): counter increments by series.
struct health_counts {
  /// (role, broker id) -> request errors, and retries.
  std::map<std::pair<std::string, std::int32_t>, std::uint64_t> errors, retries;
  /// role -> consumer group rebalances.
  std::map<std::string, std::uint64_t> rebalances;
  /// topic -> partition leader changes seen (process-wide, once per change).
  std::map<std::string, std::uint64_t> leader_changes;
  /// (role, error name) -> client errors (error_cb: all brokers down, SSL
  /// handshake, authentication, ...).
  std::map<std::pair<std::string, std::string>, std::uint64_t> client_errors;
};

/// The last error a client reported, for start-up lines and /readyz.
struct client_error {
  std::string role;
  std::string name; ///< librdkafka's error name, e.g. _ALL_BROKERS_DOWN
  std::string reason;
  std::chrono::steady_clock::time_point at;
};

/// The statistics and errors of every client of this process. Thread-safe:
/// librdkafka's threads write, samplers and HTTP threads read.
class client_health {
public:
  /// The process's registry (every client of the process reports here).
  static client_health& process();

  /// One client's statistics (librdkafka's JSON). Malformed input is
  /// ignored (it never comes from anywhere but librdkafka).
  void update(const std::string& json);

  /// An error a client reported.
  void error(const std::string& client_name, const std::string& error_name,
             const std::string& reason, bool fatal);

  /// The clients whose statistics are at most `max_age` old (a client that
  /// is gone stops reporting and drops out).
  std::vector<client_view> clients(std::chrono::milliseconds max_age) const;

  /// The counter increments since the last call (one sampler takes them).
  health_counts take();

  /// Errors reported at most `max_age` ago, the newest per role and name.
  std::vector<client_error>
  recent_errors(std::chrono::milliseconds max_age) const;

  /// Every broker address the clients' metadata named, by node id.
  std::map<std::int32_t, std::string> broker_addresses() const;

  /// Whether broker `id` accepted a connection when last tried (the Kafka
  /// health sampler tries each, as no client may need an idle one).
  void reachable(std::int32_t id, bool yes);

  /// The brokers tried at most `max_age` ago: by node id, reachable or not.
  std::map<std::int32_t, bool>
  reachability(std::chrono::milliseconds max_age) const;

  /// Forgets everything (tests).
  void clear();

  /// A client.id without a trailing "-<number>", or the name librdkafka
  /// gives a handle ("<client.id>#producer-3") reduced likewise.
  static std::string role_of(const std::string& client_name);

private:
  mutable std::mutex mtx_;
  /// By librdkafka's handle name (unique per client of the process).
  std::map<std::string, client_view> clients_;
  std::map<std::string, std::map<std::int32_t, broker_view>> last_brokers_;
  std::map<std::pair<std::string, std::int32_t>, std::int32_t> leaders_;
  health_counts pending_;
  std::map<std::pair<std::string, std::string>, client_error> errors_;
  std::map<std::int32_t, std::pair<bool, std::chrono::steady_clock::time_point>>
    reachable_;
};

/// The brokers that are down, by node id: those that refused the last
/// connection the sampler tried (`reachability`), and those some client is
/// trying to reach while no client is connected to them. What /readyz and
/// `status` name.
std::set<std::int32_t>
brokers_down(const std::vector<client_view>& clients,
             const std::map<std::int32_t, bool>& reachability);

/// True if a TCP connection to `address` ("host:port") is accepted within
/// `timeout`: whether a broker listens, without speaking Kafka to it.
bool tcp_reachable(const std::string& address,
                   std::chrono::milliseconds timeout);

} // namespace ef::kafka
