// What the DLQ handler runs in the background (its sweep) and what a group
// command does: dlq_operations' work on many entries at once.

#include "actors/dlq_operations.hpp"

#include "persistence/db_error.hpp"
#include <eventforge/config/logging.hpp>

#include <map>
#include <set>
#include <utility>

namespace ef {

using outcome = dlq_operations::outcome;
using result = dlq_operations::result;

int dlq_operations::sweep_replays(std::chrono::milliseconds grace, int limit) {
  if (!make_producer_)
    return 0; // publishes nothing: the running system's handler does
  int done = 0;
  for (auto& e : store_->claim_stale_replays(grace, limit)) {
    ef::log::info("dlq: entry {} (event {} order {}) is replaying and not "
                  "acknowledged yet (recorded without a broker, a crash or a "
                  "failed publish); publishing it",
                  e.id, e.event_id, e.order_key);
    if (publish_replay(e, "dlq-sweeper", "replay").ok())
      ++done;
  }
  return done;
}

std::vector<persistence::dlq_entry>
dlq_operations::give_up_replays(std::chrono::milliseconds give_up, int limit) {
  auto given_up = store_->give_up_replays(give_up, limit);
  for (auto& e : given_up)
    ef::log::warn("dlq: entry {} (event {} order {}): no broker acknowledged "
                  "its replay within {} ms; parked again (last error: {})",
                  e.id, e.event_id, e.order_key, give_up.count(),
                  e.replay_error.empty() ? "none" : e.replay_error);
  return given_up;
}

int dlq_operations::release_orphans(int limit) {
  int released = 0;
  for (auto id : store_->orphaned_heads(limit)) {
    ef::log::warn("dlq: entry {} waits behind discarded events only (a "
                  "release that failed); releasing it",
                  id);
    auto r = replay(id, "dlq-sweeper", "release");
    released += r.what == result::done || r.what == result::pending;
  }
  return released;
}

std::vector<dlq_operations::group_step>
dlq_operations::replay_group(const std::string& group, const std::string& actor,
                             bool dry_run) {
  std::vector<group_step> out;
  auto entries = store_->in_group(group);
  std::set<std::int64_t> members;
  for (auto& e : entries)
    members.insert(e.id);
  // Per (consumer, order): the group's entry that goes first. The order's
  // later entries of the group follow it by release, in order.
  std::map<std::pair<std::string, std::string>, std::int64_t> first_of;
  for (auto& e : entries) {
    auto key = std::make_pair(e.consumer, e.order_key);
    auto entry = "entry " + std::to_string(e.id);
    if (auto lead = first_of.find(key); lead != first_of.end()) {
      out.push_back({e,
                     {result::pending,
                      entry + " follows entry " + std::to_string(lead->second) +
                        " of this group: released once that one is through"}});
      continue;
    }
    auto before = store_->blocker_of(e.id);
    if (before && members.count(before->id) == 0) {
      out.push_back(
        {e,
         {result::refused, entry + " waits behind entry " +
                             std::to_string(before->id) + " (" +
                             before->status + ", " + before->error_class +
                             ") of its order, which this group does not "
                             "contain: decide that one first"}});
      continue;
    }
    first_of[key] = e.id;
    if (dry_run)
      out.push_back({e,
                     {result::done, "would replay " + entry + " (event " +
                                      e.event_id + ")"}});
    else
      out.push_back({e, replay(e.id, actor)});
  }
  return out;
}

} // namespace ef
