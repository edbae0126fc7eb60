#include "config/backoff.hpp"

#include <eventforge/config/settings.hpp>

#include <algorithm>

namespace ef::config {

backoff::backoff(backoff_policy p, std::uint64_t seed)
    : policy_(p), rng_(seed) {
  // nop
}

void backoff::began(clock::time_point now) {
  began_ = now;
}

void backoff::succeeded() {
  failures_ = 0;
}

std::chrono::milliseconds backoff::failed(clock::time_point now) {
  if (began_ && now - *began_ >= policy_.reset_after)
    failures_ = 0; // it was healthy: a new run of failures
  auto exponent = std::min(failures_++, 30);
  auto base = std::max<long long>(policy_.base.count(), 0);
  auto cap = std::max<long long>(policy_.cap.count(), base);
  // base * 2^exponent, saturating at the cap.
  long long delay = base;
  for (int i = 0; i < exponent && delay < cap; ++i)
    delay *= 2;
  delay = std::min(delay, cap);
  auto jitter = std::clamp(policy_.jitter, 0.0, 1.0);
  auto random_part =
    static_cast<long long>(static_cast<double>(delay) * jitter);
  if (random_part > 0) {
    std::uniform_int_distribution<long long> pick(0, random_part);
    delay = delay - random_part + pick(rng_);
  }
  return std::chrono::milliseconds(delay);
}

namespace {

std::chrono::milliseconds ms(int n) {
  return std::chrono::milliseconds(n);
}

} // namespace

backoff_policy restart_backoff(const settings& s) {
  auto& v = s.supervisor;
  return {ms(v.restart_backoff_ms), ms(v.restart_backoff_max_ms),
          v.restart_backoff_jitter, ms(v.restart_healthy_after_ms)};
}

backoff_policy retry_backoff(const settings& s) {
  auto& v = s.consumer;
  // A success ends a run of failures: no healthy spell is needed.
  return {ms(v.backoff_initial_ms), ms(v.backoff_max_ms), v.backoff_jitter,
          std::chrono::hours(24 * 365)};
}

backoff_policy publish_backoff(const settings& s) {
  auto& v = s.relay;
  return {ms(v.publish_backoff_ms), ms(v.publish_backoff_max_ms), 0.5,
          std::chrono::hours(24 * 365)};
}

} // namespace ef::config
