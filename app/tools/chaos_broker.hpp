#pragma once

// What a chaos run does to the in-process broker while its clients drive
// (app/tools, private): replace it by an empty one, or fail it as the
// fault schedule says (app/tools/fault_schedule).

#include "app/tools/chaos_report.hpp"
#include <eventforge/embedded/runtime.hpp>

#include <atomic>
#include <string>
#include <vector>

namespace ef::app::chaos_run {

/// Replaces the in-process broker by an empty one at evenly spaced points
/// of the drive; returns how many times it did.
int restart_broker_while_driving(runtime& rt, const chaos_plan& plan,
                                 pipeline& pipe,
                                 const std::atomic<bool>& driving,
                                 const drive_stats& stats);

/// Kafka faults at their points of the drive, each undone (a broker back
/// up, its delay gone) after its hold while the orders go on. Once the
/// drive is over the rest still come, in the same order: the consumers
/// then fail while they catch up.
/// Records each fault in `out`.
void inject_kafka_faults(runtime& rt, const config::settings& cfg,
                         const chaos_plan& plan,
                         const std::vector<std::string>& kinds,
                         const std::atomic<bool>& driving,
                         const drive_stats& stats, chaos_outcome& out);

} // namespace ef::app::chaos_run
