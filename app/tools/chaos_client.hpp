#pragma once

// The clients of a chaos run (app/tools, private): orders placed over HTTP
// by plan.concurrency threads that follow the pipeline to a new port after
// a restart, retry a 503 or a lost connection until the deadline, and
// cancel a share of their orders.

#include "app/tools/chaos_runner.hpp"
#include "app/tools/pipeline_host.hpp"

#include <atomic>
#include <cstdint>
#include <string>

namespace ef::app::chaos_run {

/// The W3C traceparent of logical order `i` of a run with `seed` (`space`
/// keeps backlog orders apart from driven ones). Crash decisions key on its
/// trace ID, so the same seed crashes on the same orders in every run.
std::string trace_of(std::uint64_t seed, std::uint64_t space, long i);

/// What the clients did, counted as they go.
struct drive_stats {
  std::atomic<long> created{0};
  std::atomic<long> cancelled{0};
  std::atomic<long> retries{0};
  std::atomic<long> failed{0};
};

/// Places plan.orders orders (a deterministic share of them cancelled
/// afterwards) until all are answered, the plan's timeout, or `stop`.
void drive(const pipeline& pipe, const config::settings& cfg,
           const chaos_plan& plan, const std::atomic<bool>& stop,
           drive_stats& stats);

} // namespace ef::app::chaos_run
