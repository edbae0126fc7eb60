#include "actors/eventforge.hpp"

#include "actors/api_worker.hpp"
#include "actors/group_member.hpp"
#include "actors/relay_shard.hpp"
#include "actors/supervisor.hpp"
#include "persistence/dsn.hpp"
#include "persistence/migrations.hpp"

#include <spdlog/spdlog.h>

namespace ef {

caf::actor start(caf::actor_system& sys, const config::settings& cfg,
                 const endpoints& ep) {
  auto dsn = persistence::with_connect_timeout(ep.database_dsn,
                                               cfg.database.connect_timeout_s);
  auto applied = persistence::migrate(dsn);
  if (!applied.empty())
    spdlog::info("applied {} schema migration(s), now at version {}",
                 applied.size(), applied.back());
  // Blocking actors (libpq, librdkafka) are detached; all are linked to the
  // supervisor so the tree lives and dies as one.
  constexpr auto opts = caf::detached + caf::linked;
  std::vector<child_spec> children;
  for (int i = 0; i < cfg.api.workers; ++i)
    children.push_back(
        {"api", "api-" + std::to_string(i), [=](caf::event_based_actor* self) {
           return self->spawn<opts>(api_worker, dsn, cfg.relay.shards);
         }});
  for (int s = 0; s < cfg.relay.shards; ++s)
    children.push_back({"relay", "relay-" + std::to_string(s),
                        [=](caf::event_based_actor* self) {
                          return self->spawn<opts>(relay_shard, cfg, dsn,
                                                   ep.kafka_brokers, s);
                        }});
  for (auto& name : cfg.consumer.enabled)
    children.push_back(
        {"consumer", "consumer-" + name, [=](caf::event_based_actor* self) {
           return self->spawn<opts>(group_member, cfg, dsn, ep.kafka_brokers,
                                    name);
         }});
  return sys.spawn(supervisor, std::move(children), cfg);
}

} // namespace ef
