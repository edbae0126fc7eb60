#include "actors/group_member.hpp"
#include "actors/partition_worker.hpp"
#include "kafka/group_consumer.hpp"

#include <algorithm>

namespace ef {

group_member_deps production_group_member_deps(const context_ptr& ctx,
                                               const std::string& consumer) {
  group_member_deps deps;
  deps.client = [ctx, consumer](kafka::group_client::callbacks cbs) {
    auto& cfg = ctx->cfg;
    // librdkafka's debug lines, kept in memory for the fetch watchdog, for
    // the consumers kafka.debug-consumers names (or all).
    auto& only = cfg.kafka.debug_consumers;
    bool debug = !cfg.kafka.debug_contexts.empty() &&
                 (only.empty() ||
                  std::find(only.begin(), only.end(), consumer) != only.end());
    std::string contexts;
    for (auto& c : cfg.kafka.debug_contexts)
      contexts += (contexts.empty() ? "" : ",") + c;
    return std::make_unique<kafka::group_consumer>(
      ctx->cluster, "eventforge." + consumer, cfg.kafka.topic,
      cfg.kafka.session_timeout_ms, cfg.kafka.fetch_wait_max_ms, std::move(cbs),
      debug ? contexts : std::string{});
  };
  // Partition actors block in libpq and librdkafka: detached.
  deps.worker = [ctx, consumer](caf::event_based_actor* member,
                                std::int32_t p) {
    return member->spawn<caf::detached + caf::linked>(
      partition_worker, ctx, consumer, p, caf::actor{member});
  };
  deps.ledger = [ctx] { return database_gap_ledger(ctx->dsn); };
  deps.listener = [ctx] {
    return ctx->outbox_wakeups->get(ctx->dsn, ctx->cfg.relay.shards);
  };
  deps.control = database_member_control(ctx->dsn);
  return deps;
}

caf::behavior group_member(caf::stateful_actor<group_member_state>* self,
                           context_ptr ctx, std::string consumer_name) {
  auto deps = production_group_member_deps(ctx, consumer_name);
  return group_member_with(self, std::move(ctx), std::move(consumer_name),
                           std::move(deps));
}

} // namespace ef
