// Asking a running tree from its host: its counters, and whether every
// enabled consumer has its first assignment (the ready line waits for it).

#include <eventforge/actors/eventforge.hpp>

#include <eventforge/messages/atoms.hpp>

#include <chrono>
#include <thread>

namespace ef {

counter_map counters(caf::actor_system& sys, const eventforge_actor& root) {
  counter_map out;
  caf::scoped_actor self{sys};
  self->request(root, std::chrono::seconds(10), stats_atom::value)
    .receive([&](counter_map& m) { out = m; }, [&](caf::error&) {});
  return out;
}

bool await_consumers_assigned(const telemetry& metrics,
                              const config::settings& cfg,
                              std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto assigned = [&] {
    for (auto& name : cfg.consumer.enabled)
      if (metrics.sum("consumer_rebalances_total", {{"consumer", name}}) == 0)
        return false;
    return true;
  };
  // The counter has no waiters to wake; a join takes seconds, so looking
  // every 5 ms costs nothing and adds at most 5 ms.
  while (!assigned()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

} // namespace ef
