#include "actors/partition_repairs.hpp"

#include <eventforge/config/logging.hpp>

#include <set>
#include <utility>

namespace ef {

namespace {
/// How often the broker epoch is read without news of a new one.
constexpr auto epoch_recheck = std::chrono::seconds(30);
} // namespace

partition_repairs::partition_repairs(std::string consumer,
                                     std::unique_ptr<gap_ledger> ledger,
                                     std::chrono::milliseconds stall_after)
    : consumer_(consumer), ledger_(std::move(ledger)),
      watchdog_(std::move(consumer), stall_after) {
  // nop
}

void partition_repairs::lost(std::int32_t partition, std::int64_t offset) {
  lost_[partition] = offset;
}

void partition_repairs::run(
  partition_flow& flow, kafka::group_client& client, telemetry& metrics,
  partition_flow::clock::time_point now,
  const std::function<void(std::int32_t)>& replace_worker) {
  try {
    run_once(flow, client, metrics, now, replace_worker);
    if (std::exchange(failing_, false))
      ef::log::info("{}: lost positions and the broker epoch are readable "
                    "again",
                    consumer_);
  } catch (const std::exception& e) {
    // Retried every second: at warn once per outage, then at debug.
    ef::log::at(failing_ ? spdlog::level::debug : spdlog::level::warn,
                "{}: cannot settle lost positions or read the broker epoch "
                "yet: {}",
                consumer_, e.what());
    failing_ = true;
  }
}

void partition_repairs::run_once(
  partition_flow& flow, kafka::group_client& client, telemetry& metrics,
  partition_flow::clock::time_point now,
  const std::function<void(std::int32_t)>& replace_worker) {
  struct {
    std::vector<std::int32_t> replace_workers;
    std::map<std::int32_t, std::int64_t> restart_at;
  } out;
  auto current = epoch_;
  if (epoch_due_ || now >= next_epoch_read_) {
    current = ledger_->current_epoch();
    epoch_due_ = false;
    next_epoch_read_ = now + epoch_recheck;
  }
  if (epoch_ != 0 && current != epoch_) {
    ef::log::warn("{}: broker epoch {} began; rereading {} owned "
                  "partition(s) from the log start",
                  consumer_, current, flow.slots().size());
    for (auto& [p, s] : flow.slots()) {
      out.replace_workers.push_back(p);
      out.restart_at[p] = -1;
    }
  }
  for (auto& [p, offset] : lost_) {
    if (!flow.owns(p) || out.restart_at.count(p) != 0)
      continue; // revoked ones are the next owner's
    auto settled =
      settle_lost_position(*ledger_, client, metrics, consumer_, p, offset);
    if (settled.log_replaced)
      out.replace_workers.push_back(p);
    out.restart_at[p] = settled.resume_at;
  }
  watchdog_.find_stalled(flow, client, *ledger_, metrics, now, out.restart_at);
  lost_.clear();
  epoch_ = current;
  for (auto p : out.replace_workers)
    replace_worker(p);
  if (out.restart_at.empty())
    return;
  // A replaced worker starts unpaused; the pauses (and parkings) go in with
  // the new assignment.
  std::set<std::int32_t> paused;
  for (auto& [p, s] : flow.slots())
    if (s.paused || s.parked)
      paused.insert(p);
  client.restart_at(out.restart_at, paused);
  for (auto& [p, offset] : out.restart_at)
    flow.refetched(p, now);
}

} // namespace ef
