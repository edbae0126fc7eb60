#pragma once

#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>
#include <eventforge/consumers/consumer_registry.hpp>
#include <eventforge/messages/interfaces.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <caf/all.hpp>

namespace ef {

// The tree's crash injector (internal to EventForge): a host passes it on,
// or null for a new one from cfg.chaos.
class chaos;

/// Where the tree finds its database and broker: resolved addresses, never
/// empty. Whether they are private (embedded) or external is not the tree's
/// business; the host (or `ef::instance`, app/embedded/runtime.cpp) decides
/// that before calling start().
struct endpoints {
  std::string database_dsn;
  std::string kafka_brokers;
  /// The log size per partition a cluster declares when it cannot describe
  /// its topics (DescribeConfigs): the in-process broker's; -1: none. It
  /// sizes relay.max-lead-bytes=-1.
  std::int64_t kafka_log_bytes = -1;
};

/// What EventForge needs of the host's CAF configuration; call it before
/// the actor system is created from `cfg`. Registers EventForge's error
/// categories ("ef_api", "ef_chaos"), so `sys.render(err)` names the cause;
/// in a ThreadSanitizer build it also selects CAF's work-sharing scheduler
/// (docs/sanitizers.md).
void configure_actor_system(caf::actor_system_config& cfg);

/// Starts EventForge inside an existing actor system: applies pending schema
/// migrations, then spawns the supervised tree (API workers, relay shards,
/// consumer group members with their partition actors) and returns its root.
///
/// The root answers eventforge_actor's messages (messages/interfaces.hpp)
/// from any actor. To stop the tree alone, send it an exit message (e.g.
/// caf::exit_reason::user_shutdown) and wait for its down message.
/// `metrics` receives the tree's telemetry (a new registry if null), so the
/// host can export it. `faults`: the crash decisions (new ones from
/// cfg.chaos if null); a host that restarts the tree passes the same object
/// again so a seed's crashes stay the same across the restart.
/// `consumers`: where the names in cfg.consumer.enabled are looked up
/// (consumer_registry::with_builtins() if null); each enabled consumer's
/// own migrations are applied before the tree starts. Throws if the schema
/// cannot be migrated or an enabled consumer is not registered.
eventforge_actor
start(caf::actor_system& sys, const config::settings& cfg, const endpoints& ep,
      std::shared_ptr<telemetry> metrics = nullptr,
      std::shared_ptr<chaos> faults = nullptr,
      std::shared_ptr<const consumer_registry> consumers = nullptr);

/// Waits until the group member of every consumer in cfg.consumer.enabled
/// has had its first assignment (possibly none: more members than
/// partitions), as `metrics` (start()'s) counts them, so that an order
/// written from now on flows to its effects at once. A group's first join
/// waits out the broker's group.initial.rebalance.delay.ms (3 s by default
/// on Kafka and on the in-process broker). Returns false if `timeout` passed
/// first (a broker down: the members go on trying).
bool await_consumers_assigned(const telemetry& metrics,
                              const config::settings& cfg,
                              std::chrono::milliseconds timeout);

/// How many trees ef::start started in this process whose root has not
/// terminated yet. Stop each before its actor system is destroyed: the
/// system's destructor waits for every actor, so a running tree makes it
/// wait forever (ef::instance does it for the host).
std::size_t running_trees();

/// The tree's counters (telemetry series -> value), asked from its root;
/// empty if the root does not answer within 10 s.
counter_map counters(caf::actor_system& sys, const eventforge_actor& root);

/// Graceful stop of a running tree: every relay finishes its batch and
/// stops; every group member stops fetching, waits until its partition
/// actors applied what they hold, and commits their offsets. The report is
/// drained once all did; otherwise it names every actor that answered it
/// did not drain (a failed final offset commit), failed, or did not answer
/// within shutdown.drain-timeout-ms, and "root" if the whole answer did not
/// come within `timeout`. The tree keeps running (idle): stop it with
/// ef::stop afterwards. Whatever a drain does not finish is redelivered
/// after a restart; nothing is lost either way.
drain_report drain(caf::actor_system& sys, const eventforge_actor& root,
                   std::chrono::milliseconds timeout);

/// Stops the tree and waits until every actor in it has terminated (each
/// supervisor stops its children and goes last), leaving the host's own
/// actors running. Returns false if `timeout` passed first. Drain first for
/// a graceful stop; without it, what is in flight is redelivered later.
bool stop(caf::actor_system& sys, const eventforge_actor& root,
          std::chrono::milliseconds timeout);

} // namespace ef
