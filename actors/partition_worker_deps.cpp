#include "actors/partition_worker.hpp"

namespace ef {

partition_worker_deps production_partition_worker_deps(
  const context_ptr& ctx, const std::string& consumer, std::int32_t partition) {
  partition_worker_deps deps;
  deps.sink = [ctx, consumer] {
    return std::make_unique<event_applier>(ctx->dsn,
                                           ctx->consumers.at(consumer));
  };
  deps.dlq = [ctx, consumer, partition](const partition_faults& f) {
    return dlq_parking(ctx, consumer, partition, f);
  };
  return deps;
}

caf::behavior
partition_worker(caf::stateful_actor<partition_worker_state>* self,
                 context_ptr ctx, std::string consumer, std::int32_t partition,
                 caf::actor group_member) {
  auto deps = production_partition_worker_deps(ctx, consumer, partition);
  return partition_worker_with(self, std::move(ctx), std::move(consumer),
                               partition, std::move(group_member),
                               std::move(deps));
}

} // namespace ef
