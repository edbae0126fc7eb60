#include "app/page/scenario_arms_sync.hpp"

#include "config/crash_points.hpp"
#include "persistence/db_error.hpp"
#include <eventforge/config/logging.hpp>

#include <algorithm>
#include <optional>
#include <vector>

namespace ef::app {

namespace {

std::optional<crash_point> point_named(const std::string& name) {
  for (int i = 0; i < crash_point_count; ++i)
    if (name == to_string(static_cast<crash_point>(i)))
      return static_cast<crash_point>(i);
  return std::nullopt;
}

} // namespace

scenario_arms_sync::scenario_arms_sync(std::string dsn, std::string node,
                                       std::shared_ptr<chaos> faults, bool poll,
                                       std::chrono::milliseconds every)
    : dsn_(dsn), node_(std::move(node)), faults_(std::move(faults)),
      store_(dsn),
      claims_(std::make_shared<persistence::scenario_arm_store>(dsn)) {
  if (poll)
    poller_ = std::thread([this, every] { run(every); });
}

scenario_arms_sync::~scenario_arms_sync() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (poller_.joinable())
    poller_.join();
}

bool scenario_arms_sync::arm_here(const persistence::scenario_arm& arm) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!known_.insert(arm.trace_id).second)
      return true;
  }
  bool ok = true;
  if (auto p = point_named(arm.point); p && arm.fired_by.empty()) {
    // Whichever node's actor reaches the window first claims the row; a
    // claim that cannot be made (the database is away) fires nothing.
    auto claim = [claims = claims_, trace = arm.trace_id, node = node_] {
      try {
        return claims->claim(trace, node);
      } catch (const std::exception& e) {
        ef::log::warn("scenario: the crash of trace {} not claimed: {}", trace,
                      e.what());
        return false;
      }
    };
    ok = faults_->arm_claimed(*p, arm.trace_id, arm.consumer, claim);
  }
  if (ok && arm.poison)
    ok = faults_->poison(arm.trace_id, arm.consumer);
  if (!ok) {
    faults_->disarm(arm.trace_id);
    std::lock_guard<std::mutex> guard{mtx_};
    known_.erase(arm.trace_id);
  }
  return ok;
}

void scenario_arms_sync::disarm(const std::string& trace_id) {
  faults_->disarm(trace_id);
  {
    std::lock_guard<std::mutex> guard{mtx_};
    known_.erase(trace_id);
  }
  try {
    store_.disarm(trace_id);
  } catch (const std::exception& e) {
    // It expires by itself (expires_at) if it cannot be ended now.
    ef::log::warn("scenario: trace {} not disarmed in the database: {}",
                  trace_id, e.what());
  }
}

void scenario_arms_sync::run(std::chrono::milliseconds every) {
  std::unique_lock<std::mutex> lock{mtx_};
  while (!stopping_) {
    lock.unlock();
    try {
      round();
    } catch (const std::exception& e) {
      ef::log::debug("scenario: armed scenarios not readable: {}", e.what());
    }
    lock.lock();
    stop_cv_.wait_for(lock, every, [this] { return stopping_; });
  }
}

void scenario_arms_sync::round() {
  auto live = store_.live();
  std::vector<std::string> newly_seen;
  std::set<std::string> live_traces;
  for (auto& arm : live) {
    live_traces.insert(arm.trace_id);
    bool known;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      known = known_.count(arm.trace_id) > 0;
    }
    if (!known && !arm_here(arm))
      continue; // full here: not seen, so its node refuses the run
    if (known && !arm.fired_by.empty() && arm.fired_by != node_)
      faults_->drop_crashes(arm.trace_id);
    if (std::find(arm.seen_by.begin(), arm.seen_by.end(), node_) ==
        arm.seen_by.end())
      newly_seen.push_back(arm.trace_id);
  }
  std::vector<std::string> over;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& t : known_)
      if (!live_traces.count(t))
        over.push_back(t);
    for (auto& t : over)
      known_.erase(t);
  }
  for (auto& t : over)
    faults_->disarm(t);
  store_.seen(node_, newly_seen);
}

} // namespace ef::app
