#include "actors/tree_children.hpp"

#include "actors/api_worker.hpp"
#include "actors/dlq_desk.hpp"
#include "actors/dlq_handler.hpp"
#include "actors/gauge_sampler.hpp"
#include "actors/group_member.hpp"
#include "actors/janitor.hpp"
#include "actors/kafka_health.hpp"
#include "actors/relay_shard.hpp"
#include "actors/repairer.hpp"

namespace ef {

namespace {

// Blocking actors (libpq, librdkafka) are detached; every actor is linked to
// its supervisor so the tree lives and dies as one.
constexpr auto blocking_child = caf::detached + caf::linked;

/// A child that is itself a supervisor of `children`.
child_spec sub_supervisor(std::string name, std::vector<child_spec> children,
                          context_ptr ctx, std::string route = {}) {
  return {"supervisor", name,
          [=](caf::local_actor* self) {
            return caf::actor_cast<caf::actor>(
              self->spawn<caf::linked>(supervisor, name, children, ctx));
          },
          route};
}

std::vector<child_spec> api_workers(const context_ptr& ctx) {
  std::vector<child_spec> out;
  for (int i = 0; i < ctx->cfg.api.workers; ++i)
    out.push_back({"api", "api-" + std::to_string(i),
                   [=](caf::local_actor* self) {
                     return caf::actor_cast<caf::actor>(
                       self->spawn<blocking_child>(api_worker, ctx));
                   },
                   "orders"});
  return out;
}

std::vector<child_spec> relay_shards(const context_ptr& ctx) {
  std::vector<child_spec> out;
  for (int s = 0; s < ctx->cfg.relay.shards; ++s)
    out.push_back({"relay", "relay-" + std::to_string(s),
                   [=](caf::local_actor* self) {
                     return self->spawn<blocking_child>(relay_shard, ctx, s);
                   },
                   ""});
  return out;
}

std::vector<child_spec> consumer_group(const context_ptr& ctx,
                                       const std::string& name) {
  return {{"group-member", "group-member",
           [=](caf::local_actor* self) {
             return self->spawn<blocking_child>(group_member, ctx, name);
           },
           ""}};
}

/// The DLQ handler (the DLQ topic, the replay sweep) and two desks for
/// operator commands: one for replays and discards ("dlq"), one for reads
/// ("dlq-reads"), so no answer waits behind the sweep's publishes and no
/// read behind a replay's.
std::vector<child_spec> dlq_children(const context_ptr& ctx) {
  auto desk = [=](caf::local_actor* self) {
    return caf::actor_cast<caf::actor>(
      self->spawn<blocking_child>(dlq_desk, ctx));
  };
  return {{"dlq-handler", "dlq-handler",
           [=](caf::local_actor* self) {
             return caf::actor_cast<caf::actor>(
               self->spawn<blocking_child>(dlq_handler, ctx));
           },
           ""},
          {"dlq-desk", "dlq-desk", desk, "dlq"},
          {"dlq-desk", "dlq-reader", desk, "dlq-reads"}};
}

} // namespace

std::vector<child_spec> tree_children(const context_ptr& ctx) {
  auto& cfg = ctx->cfg;
  std::vector<child_spec> top;
  top.push_back(sub_supervisor("api", api_workers(ctx), ctx, "orders"));
  top.push_back(sub_supervisor("relays", relay_shards(ctx), ctx));
  top.push_back(sub_supervisor("dlq", dlq_children(ctx), ctx, "dlq"));
  top.push_back(
    sub_supervisor("maintenance",
                   {{"janitor", "janitor",
                     [=](caf::local_actor* self) {
                       return self->spawn<blocking_child>(janitor, ctx);
                     },
                     ""},
                    {"repairer", "repairer",
                     [=](caf::local_actor* self) {
                       return self->spawn<blocking_child>(repairer, ctx);
                     },
                     ""},
                    {"gauge-sampler", "gauge-sampler",
                     [=](caf::local_actor* self) {
                       return self->spawn<blocking_child>(gauge_sampler, ctx);
                     },
                     ""},
                    {"lag-sampler", "lag-sampler",
                     [=](caf::local_actor* self) {
                       return self->spawn<blocking_child>(lag_sampler, ctx);
                     },
                     ""},
                    {"kafka-health", "kafka-health",
                     [=](caf::local_actor* self) {
                       return self->spawn<blocking_child>(kafka_health, ctx);
                     },
                     ""}},
                   ctx));
  for (auto& name : cfg.consumer.enabled)
    top.push_back(
      sub_supervisor("consumer-" + name, consumer_group(ctx, name), ctx));
  return top;
}

} // namespace ef
