#include "kafka/client_health.hpp"

#include <nlohmann/json.hpp>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

namespace ef::kafka {

namespace {

using clock = std::chrono::steady_clock;

/// A client that stopped reporting this long ago is gone (its handle was
/// destroyed): forgotten, so short-lived clients do not pile up.
constexpr auto forget_after = std::chrono::minutes(5);

std::int64_t int_of(const nlohmann::json& j, const char* key) {
  auto i = j.find(key);
  return i != j.end() && i->is_number() ? i->get<std::int64_t>() : 0;
}

std::string text_of(const nlohmann::json& j, const char* key) {
  auto i = j.find(key);
  return i != j.end() && i->is_string() ? i->get<std::string>() : "";
}

/// Microseconds of a latency window's `field` (avg, p99, ...) in seconds.
double seconds_of(const nlohmann::json& j, const char* window,
                  const char* field) {
  auto w = j.find(window);
  if (w == j.end() || !w->is_object())
    return 0;
  return static_cast<double>(int_of(*w, field)) / 1e6;
}

/// The brokers of one client: those with a node id, and the group
/// coordinator's logical link (librdkafka's "GroupCoordinator", node -1).
void read_brokers(const nlohmann::json& stats, client_view& out) {
  auto brokers = stats.find("brokers");
  if (brokers == stats.end() || !brokers->is_object())
    return;
  for (auto& [name, b] : brokers->items()) {
    auto source = text_of(b, "source");
    auto id = static_cast<std::int32_t>(int_of(b, "nodeid"));
    if (source == "logical") {
      if (name.find("GroupCoordinator") != std::string::npos)
        out.coordinator_up = text_of(b, "state") == "UP";
      continue;
    }
    if (source == "internal" || id < 0)
      continue; // the internal queue thread, or a bootstrap entry
    broker_view v;
    v.id = id;
    // "host:port/id"
    v.address = name.substr(0, name.rfind('/'));
    v.state = text_of(b, "state");
    v.rtt_seconds = seconds_of(b, "rtt", "avg");
    v.outstanding = int_of(b, "outbuf_cnt") + int_of(b, "waitresp_cnt");
    v.errors = static_cast<std::uint64_t>(
      int_of(b, "txerrs") + int_of(b, "rxerrs") + int_of(b, "req_timeouts"));
    v.retries = static_cast<std::uint64_t>(int_of(b, "txretries"));
    out.queue_latency_seconds =
      std::max(out.queue_latency_seconds, seconds_of(b, "int_latency", "p99"));
    out.brokers.push_back(v);
  }
  std::sort(out.brokers.begin(), out.brokers.end(),
            [](auto& a, auto& b) { return a.id < b.id; });
}

} // namespace

std::set<std::int32_t>
brokers_down(const std::vector<client_view>& clients,
             const std::map<std::int32_t, bool>& reachability) {
  std::map<std::int32_t, bool> connected, trying;
  for (auto& c : clients)
    for (auto& b : c.brokers) {
      if (b.up())
        connected[b.id] = true;
      else if (!b.idle())
        trying[b.id] = true;
    }
  std::set<std::int32_t> out;
  for (auto& [id, yes] : reachability)
    if (!yes && !connected.count(id))
      out.insert(id);
  for (auto& [id, yes] : trying)
    if (!connected.count(id) &&
        !(reachability.count(id) && reachability.at(id)))
      out.insert(id);
  return out;
}

bool tcp_reachable(const std::string& address,
                   std::chrono::milliseconds timeout) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos)
    return false;
  auto host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2); // [::1]
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), address.substr(colon + 1).c_str(), &hints,
                    &found) != 0)
    return false;
  bool ok = false;
  for (auto* a = found; a && !ok; a = a->ai_next) {
    int fd =
      ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
               a->ai_protocol);
    if (fd < 0)
      continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof(err);
      ok = ::poll(&p, 1, static_cast<int>(timeout.count())) == 1 &&
           ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return ok;
}

client_health& client_health::process() {
  static client_health the;
  return the;
}

std::string client_health::role_of(const std::string& client_name) {
  auto role = client_name.substr(0, client_name.find('#'));
  auto dash = role.find_last_of('-');
  if (dash != std::string::npos && dash + 1 < role.size() &&
      std::all_of(role.begin() + static_cast<std::ptrdiff_t>(dash) + 1,
                  role.end(),
                  [](unsigned char c) { return std::isdigit(c) != 0; }))
    role.erase(dash);
  return role;
}

void client_health::update(const std::string& json) {
  auto stats = nlohmann::json::parse(json, nullptr, false);
  if (!stats.is_object())
    return;
  auto name = text_of(stats, "name");
  client_view v;
  v.role = role_of(text_of(stats, "client_id"));
  v.type = text_of(stats, "type");
  v.at = clock::now();
  read_brokers(stats, v);
  if (v.type == "producer")
    v.undelivered = int_of(stats, "msg_cnt");
  if (auto g = stats.find("cgrp"); g != stats.end() && g->is_object()) {
    v.in_group = true;
    v.group_state = text_of(*g, "state");
    v.rebalances = static_cast<std::uint64_t>(int_of(*g, "rebalance_cnt"));
    v.assigned = int_of(*g, "assignment_size");
  }
  std::vector<std::tuple<std::string, std::int32_t, std::int32_t>> leaders;
  if (auto t = stats.find("topics"); t != stats.end() && t->is_object())
    for (auto& [topic, body] : t->items()) {
      auto parts = body.find("partitions");
      if (parts == body.end() || !parts->is_object())
        continue;
      for (auto& [id, p] : parts->items()) {
        auto partition = static_cast<std::int32_t>(int_of(p, "partition"));
        if (partition < 0)
          continue; // the unassigned-partition queue
        leaders.emplace_back(topic, partition,
                             static_cast<std::int32_t>(int_of(p, "leader")));
        auto lag = p.find("consumer_lag");
        if (v.in_group && lag != p.end() && lag->is_number() &&
            lag->get<std::int64_t>() >= 0)
          v.lag[partition] = lag->get<std::int64_t>();
      }
    }
  std::lock_guard<std::mutex> guard{mtx_};
  // Counters from cumulative figures: what grew since this client's last
  // statistics.
  auto& before = last_brokers_[name];
  for (auto& b : v.brokers) {
    auto i = before.find(b.id);
    auto key = std::make_pair(v.role, b.id);
    if (i != before.end()) {
      if (b.errors > i->second.errors)
        pending_.errors[key] += b.errors - i->second.errors;
      if (b.retries > i->second.retries)
        pending_.retries[key] += b.retries - i->second.retries;
    }
    before[b.id] = b;
  }
  if (auto old = clients_.find(name);
      old != clients_.end() && v.rebalances > old->second.rebalances)
    pending_.rebalances[v.role] += v.rebalances - old->second.rebalances;
  // A leader change is counted once per process, by whichever client sees
  // it first; -1 (unknown while metadata is refreshed) is no change.
  for (auto& [topic, partition, leader] : leaders) {
    if (leader < 0)
      continue;
    auto [it, fresh] = leaders_.try_emplace({topic, partition}, leader);
    if (!fresh && it->second != leader) {
      ++pending_.leader_changes[topic];
      it->second = leader;
    }
  }
  clients_[name] = std::move(v);
  for (auto i = clients_.begin(); i != clients_.end();) {
    if (clock::now() - i->second.at > forget_after) {
      last_brokers_.erase(i->first);
      i = clients_.erase(i);
    } else {
      ++i;
    }
  }
}

void client_health::error(const std::string& client_name,
                          const std::string& error_name,
                          const std::string& reason, bool fatal) {
  auto role = role_of(client_name);
  std::lock_guard<std::mutex> guard{mtx_};
  ++pending_.client_errors[{role, error_name}];
  errors_[{role, error_name}] = client_error{
    role, error_name, (fatal ? "fatal: " : "") + reason, clock::now()};
}

std::vector<client_view>
client_health::clients(std::chrono::milliseconds max_age) const {
  std::vector<client_view> out;
  auto now = clock::now();
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [name, v] : clients_)
    if (now - v.at <= max_age)
      out.push_back(v);
  return out;
}

health_counts client_health::take() {
  std::lock_guard<std::mutex> guard{mtx_};
  auto out = std::move(pending_);
  pending_ = {};
  return out;
}

std::vector<client_error>
client_health::recent_errors(std::chrono::milliseconds max_age) const {
  std::vector<client_error> out;
  auto now = clock::now();
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [key, e] : errors_)
    if (now - e.at <= max_age)
      out.push_back(e);
  return out;
}

std::map<std::int32_t, std::string> client_health::broker_addresses() const {
  std::map<std::int32_t, std::string> out;
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [name, v] : clients_)
    for (auto& b : v.brokers)
      if (!b.address.empty())
        out[b.id] = b.address;
  return out;
}

void client_health::reachable(std::int32_t id, bool yes) {
  std::lock_guard<std::mutex> guard{mtx_};
  reachable_[id] = {yes, clock::now()};
}

std::map<std::int32_t, bool>
client_health::reachability(std::chrono::milliseconds max_age) const {
  std::map<std::int32_t, bool> out;
  auto now = clock::now();
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [id, seen] : reachable_)
    if (now - seen.second <= max_age)
      out[id] = seen.first;
  return out;
}

void client_health::clear() {
  std::lock_guard<std::mutex> guard{mtx_};
  clients_.clear();
  reachable_.clear();
  last_brokers_.clear();
  leaders_.clear();
  pending_ = {};
  errors_.clear();
}

} // namespace ef::kafka
