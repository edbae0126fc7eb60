#include "actors/consumer_operations.hpp"

#include "kafka/offsets.hpp"

#include <algorithm>

namespace ef {

consumer_operations::consumer_operations(config::settings cfg, std::string dsn,
                                         kafka::connection cluster)
    : cfg_(std::move(cfg)), cluster_(std::move(cluster)), db_(std::move(dsn)) {}

std::string consumer_operations::check_name(const std::string& name) const {
  auto& known = cfg_.consumer.enabled;
  if (std::find(known.begin(), known.end(), name) != known.end())
    return "";
  std::string list;
  for (auto& k : known)
    list += (list.empty() ? "" : ", ") + k;
  return "no consumer named " + name + " (configured: " + list + ")";
}

nlohmann::json consumer_operations::overview() {
  auto controls = db_.controls();
  auto out = nlohmann::json::array();
  for (auto& name : cfg_.consumer.enabled) {
    nlohmann::json c{{"consumer", name}, {"paused", false}};
    for (auto& row : controls)
      if (row.consumer == name) {
        c["paused"] = row.paused;
        c["changed_at"] = row.changed_at;
        c["changed_by"] = row.changed_by;
      }
    auto members = nlohmann::json::array();
    for (auto& m : db_.members(name, member_window_s))
      members.push_back({{"node", m.node},
                         {"member", m.member},
                         {"state", m.state},
                         {"partitions", m.partitions},
                         {"seen_seconds_ago", m.seen_seconds_ago}});
    c["members"] = std::move(members);
    out.push_back(std::move(c));
  }
  return out;
}

std::string consumer_operations::set_paused(const std::string& name,
                                            bool paused,
                                            const std::string& actor) {
  bool changed = db_.set_paused(name, paused, actor);
  if (!changed)
    return name + " was already " + (paused ? "paused" : "running");
  return paused ? name + " paused: every node's member applies what it holds, "
                         "commits and leaves the group within a second or so"
                : name + " resumed: every node's member joins the group "
                         "again within a second or so";
}

namespace {

/// The target offset of each partition for `to`.
std::vector<std::int64_t> targets(const kafka::connection& cluster,
                                  const std::string& topic, int partitions,
                                  const reset_target& to,
                                  const std::vector<std::int64_t>& committed) {
  switch (to.what) {
  case reset_target::kind::earliest:
    return kafka::log_start_offsets(cluster, topic, partitions);
  case reset_target::kind::time:
    return kafka::offsets_for_time(cluster, topic, partitions, to.unix_ms);
  case reset_target::kind::offset:
    break;
  }
  auto out = committed; // only the named partition moves
  out[static_cast<size_t>(to.partition)] = to.offset;
  return out;
}

} // namespace

reset_plan consumer_operations::plan_reset(const std::string& name,
                                           const reset_target& to) {
  reset_plan plan;
  plan.consumer = name;
  auto& topic = cfg_.kafka.topic;
  int partitions = cfg_.kafka.partitions;
  if (to.what == reset_target::kind::offset &&
      (to.partition < 0 || to.partition >= partitions)) {
    plan.refused = "partition " + std::to_string(to.partition) + " of " +
                   topic + " does not exist (it has " +
                   std::to_string(partitions) + ")";
    return plan;
  }
  auto paused = false;
  for (auto& row : db_.controls())
    paused = paused || (row.consumer == name && row.paused);
  if (!paused)
    plan.refused = name +
                   " is not paused: pause it first (eventforge "
                   "consumer pause " +
                   name +
                   "), so no member commits "
                   "over the reset";
  for (auto& m : db_.members(name, member_window_s))
    if (m.state == "consuming" && plan.refused.empty())
      plan.refused = "a member of " + name + " on node " + m.node +
                     " still consumes (seen " +
                     std::to_string(static_cast<int>(m.seen_seconds_ago)) +
                     " s ago); it leaves the group once it has applied what "
                     "it holds: try again in a few seconds";
  auto group = "eventforge." + name;
  auto committed = kafka::committed_offsets(cluster_, group, topic, partitions);
  auto target = targets(cluster_, topic, partitions, to, committed);
  auto ends = kafka::log_end_offsets(cluster_, topic, partitions);
  for (int p = 0; p < partitions; ++p) {
    auto now = committed[static_cast<size_t>(p)];
    auto t =
      std::min(target[static_cast<size_t>(p)], ends[static_cast<size_t>(p)]);
    if (t == now)
      continue;
    plan.partitions.push_back({p, now, t});
    // Nothing committed: the member would start at the log start.
    if (now > t)
      plan.reread += now - t;
  }
  return plan;
}

void consumer_operations::apply_reset(const reset_plan& plan,
                                      const std::string& actor) {
  if (!plan.refused.empty())
    throw std::logic_error("reset refused: " + plan.refused);
  std::vector<std::pair<int, std::int64_t>> offsets;
  std::string detail;
  for (auto& p : plan.partitions) {
    offsets.emplace_back(p.id, p.target);
    detail += (detail.empty() ? "" : " ") + std::to_string(p.id) + ":" +
              std::to_string(p.committed) + "->" + std::to_string(p.target);
  }
  if (offsets.empty())
    return;
  kafka::commit_offsets(cluster_, "eventforge." + plan.consumer,
                        cfg_.kafka.topic, offsets);
  db_.log(plan.consumer, "reset",
          detail + " (" + std::to_string(plan.reread) + " records re-read)",
          actor);
}

} // namespace ef
