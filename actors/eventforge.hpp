#pragma once

#include "actors/telemetry.hpp"
#include "config/settings.hpp"

#include <memory>

#include <caf/all.hpp>

namespace ef {

/// Where the tree finds its database and broker: resolved addresses, never
/// empty. Whether they are private (embedded) or external is not the tree's
/// business; app/runtime decides that before calling start().
struct endpoints {
  std::string database_dsn;
  std::string kafka_brokers;
};

/// Starts EventForge inside an existing actor system: applies pending schema
/// migrations, then spawns the supervised tree (API workers, relay shards,
/// consumer group members with their partition actors) and returns its root.
///
/// The root accepts create_order, cancel_order and get_order from any actor
/// (see messages/order_messages.hpp). To stop the tree, send it an exit
/// message (e.g. caf::exit_reason::user_shutdown) and await its termination.
/// `metrics` receives the tree's telemetry (a new registry if null), so the
/// host can export it. Throws if the schema cannot be migrated.
caf::actor start(caf::actor_system& sys, const config::settings& cfg,
                 const endpoints& ep,
                 std::shared_ptr<telemetry> metrics = nullptr);

} // namespace ef
