#include "actors/chaos.hpp"
#include "config/crash_points.hpp"
#include "messages/ids.hpp"
#include <eventforge/config/logging.hpp>

#include <algorithm>

namespace ef {

namespace {

constexpr const auto& point_names = config::crash_point_names;
static_assert(point_names.size() == crash_point_count,
              "one name per ef::crash_point");

std::uint64_t mix(std::uint64_t x) {
  // splitmix64 finalizer: a well-spread bijection.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace

std::string chaos_key(const std::string& traceparent,
                      const std::string& event_type,
                      const std::string& event_id) {
  // traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>
  if (traceparent.size() >= 35 && traceparent[2] == '-')
    return traceparent.substr(3, 32) + "/" + event_type;
  return event_id;
}

const char* to_string(crash_point p) {
  return point_names[static_cast<int>(p)];
}

const char* to_string(chaos_errc code) {
  switch (code) {
  case chaos_errc::none:
    return "none";
  case chaos_errc::injected_crash:
    return "injected_crash";
  }
  return "unknown";
}

injected_crash::injected_crash(crash_point p)
    : std::runtime_error(std::string("injected crash at ") + to_string(p)),
      point(p) {
  // nop
}

chaos::chaos(const config::settings::chaos_section& cfg,
             std::shared_ptr<telemetry> metrics)
    : rate_(cfg.rate), seed_(cfg.seed), max_crashes_(cfg.max_crashes_per_event),
      metrics_(std::move(metrics)) {
  for (auto& name : cfg.points)
    for (int i = 0; i < crash_point_count; ++i)
      if (name == point_names[i])
        configured_ |= 1u << i;
  if (rate_ <= 0)
    configured_ = 0;
  mask_ = configured_;
}

namespace {

/// A crash key names its trace ("<consumer>/<trace>/<type>" or
/// "<trace>/<type>"); an armed crash matches by trace and consumer.
bool matches(const std::string& key, const std::string& trace_id,
             const std::string& consumer) {
  if (trace_id.empty() || key.find(trace_id) == std::string::npos)
    return false;
  return consumer.empty() || key.rfind(consumer + "/", 0) == 0;
}

} // namespace

void chaos::on_crash(std::function<void(crash_point, const crash_site&)> f) {
  std::lock_guard<std::mutex> guard{mtx_};
  observer_ = std::move(f);
}

bool chaos::add_armed(armed_crash a) {
  if (armed_.size() >= max_armed)
    return false;
  mask_ |= 1u << static_cast<unsigned>(a.point);
  armed_.push_back(std::move(a));
  return true;
}

void chaos::drop_armed(const std::string& trace_id) {
  armed_.erase(std::remove_if(
                 armed_.begin(), armed_.end(),
                 [&](const armed_crash& a) { return a.trace_id == trace_id; }),
               armed_.end());
  update_mask();
}

bool chaos::arm(crash_point p, const std::string& trace_id,
                const std::string& consumer) {
  std::lock_guard<std::mutex> guard{mtx_};
  return add_armed({p, trace_id, consumer, {}, {}});
}

bool chaos::arm_claimed(crash_point p, const std::string& trace_id,
                        const std::string& consumer,
                        std::function<bool()> claim) {
  std::lock_guard<std::mutex> guard{mtx_};
  return add_armed({p, trace_id, consumer, {}, std::move(claim)});
}

void chaos::drop_crashes(const std::string& trace_id) {
  std::lock_guard<std::mutex> guard{mtx_};
  drop_armed(trace_id);
}

void chaos::update_mask() {
  auto still = configured_;
  for (auto& a : armed_)
    still |= 1u << static_cast<unsigned>(a.point);
  mask_ = still;
}

bool chaos::arm_action(crash_point p, const std::string& trace_id,
                       std::function<void()> action) {
  std::lock_guard<std::mutex> guard{mtx_};
  return add_armed({p, trace_id, "", std::move(action), {}});
}

bool chaos::poison(const std::string& trace_id, const std::string& consumer) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (poisoned_.size() >= max_armed)
    return false;
  poisoned_.emplace_back(trace_id, consumer);
  any_poison_ = true;
  return true;
}

void chaos::disarm(const std::string& trace_id) {
  std::lock_guard<std::mutex> guard{mtx_};
  drop_armed(trace_id);
  poisoned_.erase(
    std::remove_if(poisoned_.begin(), poisoned_.end(),
                   [&](const auto& p) { return p.first == trace_id; }),
    poisoned_.end());
  any_poison_ = !poisoned_.empty();
}

bool chaos::armed_for(const std::string& trace_id) const {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& a : armed_)
    if (a.trace_id == trace_id)
      return true;
  for (auto& p : poisoned_)
    if (p.first == trace_id)
      return true;
  return false;
}

bool chaos::poisoned_slow(const std::string& key) const {
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [trace, consumer] : poisoned_)
    if (matches(key, trace, consumer))
      return true;
  return false;
}

void chaos::stall_fetch(const std::string& consumer, std::int32_t partition) {
  std::lock_guard<std::mutex> guard{mtx_};
  stalls_.emplace_back(consumer, partition);
  any_stall_ = true;
}

bool chaos::take_fetch_stall_slow(const std::string& consumer,
                                  std::int32_t partition) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = std::find(stalls_.begin(), stalls_.end(),
                     std::make_pair(consumer, partition));
  if (i == stalls_.end())
    return false;
  stalls_.erase(i);
  any_stall_ = !stalls_.empty();
  return true;
}

bool chaos::take_armed(crash_point p, const std::string& key,
                       std::function<void()>& action,
                       std::function<bool()>& claim) {
  for (auto i = armed_.begin(); i != armed_.end(); ++i) {
    if (i->point != p || !matches(key, i->trace_id, i->consumer))
      continue;
    action = std::move(i->action);
    claim = std::move(i->claim);
    armed_.erase(i);
    update_mask();
    return true;
  }
  return false;
}

bool chaos::decide(std::uint64_t seed, crash_point p,
                   const std::string& event_id, int attempt, double rate) {
  auto h = mix(mix(seed ^ fnv1a64(to_string(p))) ^ fnv1a64(event_id) ^
               static_cast<std::uint64_t>(attempt));
  double u = static_cast<double>(h >> 11) * 0x1.0p-53;
  return u < rate;
}

bool chaos::decide_and_count(crash_point p, const std::string& key,
                             const crash_site& site) {
  bool crash = false;
  std::function<void(crash_point, const crash_site&)> observer;
  std::function<void()> action;
  std::function<bool()> claim;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    observer = observer_;
    if (take_armed(p, key, action, claim)) {
      crash = !action;
    } else if ((configured_ & (1u << static_cast<unsigned>(p))) != 0) {
      auto& v = visits_[{static_cast<int>(p), key}];
      crash =
        v.crashes < max_crashes_ && decide(seed_, p, key, v.crashes, rate_);
      ++v.attempts;
      if (crash)
        ++v.crashes;
    }
  }
  if (action) {
    ef::log::info("chaos: running the action armed at {} for {}", to_string(p),
                  key);
    action(); // outside the lock: it may take a while (a broker's answer)
  }
  // Outside the lock too: the claim is a database round trip, and only
  // the node whose claim succeeds crashes.
  if (crash && claim && !claim()) {
    ef::log::info("chaos: the crash armed at {} for {} fired elsewhere",
                  to_string(p), key);
    crash = false;
  }
  if (!crash)
    return false;
  if (metrics_)
    metrics_->add("chaos_crashes_total", {{"point", to_string(p)}});
  if (observer)
    observer(p, site);
  ef::log::debug("chaos: crashing at {} for {}", to_string(p), key);
  return true;
}

void chaos::evaluate(crash_point p, const std::string& key,
                     const crash_site& site) {
  if (decide_and_count(p, key, site))
    throw injected_crash(p);
}

std::vector<std::string> chaos::injected() const {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& [k, v] : visits_)
    for (int i = 0; i < v.crashes; ++i)
      out.push_back(std::string(point_names[k.first]) + " " + k.second);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace ef
