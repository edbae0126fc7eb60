#include "actors/partition_workers.hpp"

#include "actors/crash_log.hpp"

namespace ef {

partition_workers::partition_workers(caf::event_based_actor* member,
                                     context_ptr ctx, std::string consumer,
                                     spawner spawn)
    : member_(member), ctx_(ctx), consumer_(consumer), spawn_(std::move(spawn)),
      rules_(ctx->cfg, ctx->metrics, consumer + " group member") {
  // nop
}

void partition_workers::start(std::int32_t p) {
  auto i = workers_.find(p);
  if (i == workers_.end())
    i = workers_.emplace(p, worker{{}, rules_.new_backoff()}).first;
  i->second.actor = spawn_(member_, p);
  i->second.restarts.began(member_->clock().now());
}

void partition_workers::halt(worker& w) {
  if (!w.actor)
    return;
  member_->unlink_from(w.actor);
  member_->send_exit(w.actor, caf::exit_reason::user_shutdown);
  w.actor = caf::actor{};
}

void partition_workers::replace(std::int32_t p) {
  if (auto i = workers_.find(p); i != workers_.end())
    halt(i->second);
  start(p);
}

void partition_workers::remove(std::int32_t p) {
  if (auto i = workers_.find(p); i != workers_.end()) {
    halt(i->second);
    workers_.erase(i);
  }
}

caf::actor partition_workers::actor_of(std::int32_t p) const {
  auto i = workers_.find(p);
  return i == workers_.end() ? caf::actor{} : i->second.actor;
}

bool partition_workers::waiting(std::int32_t p) const {
  auto i = workers_.find(p);
  return i != workers_.end() && !i->second.actor;
}

std::optional<std::pair<std::int32_t, std::chrono::milliseconds>>
partition_workers::crashed(const caf::exit_msg& em) {
  for (auto& [p, w] : workers_) {
    if (!w.actor || w.actor.address() != em.source)
      continue;
    w.actor = caf::actor{};
    auto rendered = member_->system().render(em.reason);
    auto delay = rules_.on_crash(
      "partition", consumer_ + " partition " + std::to_string(p), em.reason,
      rendered, w.restarts, member_->clock().now());
    journal_restart(*ctx_, consumer_ + " p" + std::to_string(p), em.reason,
                    consumer_ + " group member restarts the partition " +
                      std::to_string(p) + " actor after " + rendered +
                      "; it reads again from the committed offset");
    return std::make_pair(p, delay);
  }
  return std::nullopt;
}

void partition_workers::stop_all(const caf::error& reason) {
  for (auto& [p, w] : workers_)
    if (w.actor) {
      member_->monitor(w.actor);
      member_->send_exit(w.actor, reason);
    }
}

bool partition_workers::ended(const caf::actor_addr& source) {
  for (auto i = workers_.begin(); i != workers_.end();)
    i = !i->second.actor || i->second.actor.address() == source
          ? workers_.erase(i)
          : std::next(i);
  return workers_.empty();
}

std::map<std::string, caf::actor> partition_workers::live() const {
  std::map<std::string, caf::actor> out;
  for (auto& [p, w] : workers_)
    if (w.actor)
      out.emplace("partition-" + std::to_string(p), w.actor);
  return out;
}

} // namespace ef
