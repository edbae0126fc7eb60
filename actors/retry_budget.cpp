#include "actors/retry_budget.hpp"

#include "messages/ids.hpp"
#include <eventforge/config/logging.hpp>

#include <utility>

namespace ef {

retry_budget::retry_budget(const config::settings& cfg, std::string who)
    : who_(std::move(who)), max_attempts_(cfg.consumer.max_attempts),
      wait_(config::retry_backoff(cfg)) {
  // nop
}

retry_budget::verdict
retry_budget::failed(const failure& why, std::int64_t offset,
                     config::backoff::clock::time_point now) {
  // Exponential, with jitter, so retries of many partitions after one
  // outage do not arrive in lockstep.
  auto wait = wait_.failed(now);
  if (first_failure_at_.empty())
    first_failure_at_ = now_rfc3339();
  if (why.outage) {
    ef::log::at(std::exchange(in_outage_, true) ? spdlog::level::debug
                                                : spdlog::level::warn,
                "{} offset {}: {}; retrying while the database is "
                "unavailable (not counted against consumer.max-attempts)",
                who_, offset, why.message);
    return {false, wait};
  }
  ++attempts_;
  if (why.cls == failure_class::permanent || attempts_ >= max_attempts_)
    return {true, wait}; // the wait applies if parking fails
  ef::log::info("{} offset {}: attempt {} failed ({}: {}); retrying", who_,
                offset, attempts_, why.kind, why.message);
  return {false, wait};
}

void retry_budget::succeeded(std::int64_t offset) {
  if (std::exchange(in_outage_, false))
    ef::log::info("{}: the database is back; offset {} is through", who_,
                  offset);
  attempts_ = 0;
  wait_.succeeded();
  first_failure_at_.clear();
}

} // namespace ef
