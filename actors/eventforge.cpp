#include <eventforge/actors/eventforge.hpp>

#include "actors/crash_log.hpp"
#include "actors/declared_series.hpp"
#include "actors/supervisor.hpp"
#include "actors/tree_children.hpp"
#include "config/backoff.hpp"
#include "persistence/dsn.hpp"
#include "persistence/fixed_settings.hpp"
#include "persistence/migrations.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/config/options.hpp>
#include <eventforge/messages/atoms.hpp>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace ef {

namespace {

/// Trees started and not yet terminated: what a runtime about to stop its
/// services under a running tree checks. A root leaves the set in its own
/// cleanup, which CAF runs after the down message to a monitor that came
/// later (ef::stop's): stop() waits for the leave, so that a caller reading
/// the count after stop() returned never sees a tree that is already down.
class live_trees {
public:
  void enter(caf::actor_id id) {
    std::lock_guard<std::mutex> guard{mtx_};
    ids_.insert(id);
  }
  void leave(caf::actor_id id) {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      ids_.erase(id);
    }
    left_.notify_all();
  }
  bool await_left(caf::actor_id id,
                  std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock{mtx_};
    return left_.wait_until(lock, deadline, [&] { return !ids_.count(id); });
  }
  std::size_t size() {
    std::lock_guard<std::mutex> guard{mtx_};
    return ids_.size();
  }

private:
  std::mutex mtx_;
  std::condition_variable left_;
  std::set<caf::actor_id> ids_;
};

live_trees& trees() {
  static live_trees instance;
  return instance;
}

} // namespace

drain_report drain(caf::actor_system& sys, const eventforge_actor& root,
                   std::chrono::milliseconds timeout) {
  drain_report report;
  caf::scoped_actor self{sys};
  self->request(root, timeout, drain_atom::value)
    .receive([&](drain_report& r) { report = std::move(r); },
             [&](caf::error& err) {
               report.drained = false;
               report.not_drained.push_back(
                 "root: " + (err == caf::sec::request_timeout
                               ? "no answer within " +
                                   std::to_string(timeout.count()) + " ms"
                               : sys.render(err)));
             });
  return report;
}

bool stop(caf::actor_system& sys, const eventforge_actor& root,
          std::chrono::milliseconds timeout) {
  if (!root)
    return true;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  caf::scoped_actor self{sys};
  self->monitor(root);
  self->send_exit(root, caf::exit_reason::user_shutdown);
  bool down = false;
  self->receive([&](caf::down_msg& d) { down = d.source == root.address(); },
                caf::after(timeout) >> [] {});
  // The down message comes from the root's cleanup, a moment before the
  // cleanup takes the root off the live trees (see live_trees).
  return down && trees().await_left(root.id(), deadline);
}

namespace {

/// The enabled consumers, by name; throws std::invalid_argument naming the
/// first enabled name that is not registered, or a consumer the host
/// registered that is not enabled.
std::map<std::string, consumer_ptr>
enabled_consumers(const config::settings& cfg,
                  const consumer_registry& registry) {
  std::map<std::string, consumer_ptr> out;
  for (auto& name : cfg.consumer.enabled) {
    auto c = registry.find(name);
    if (!c) {
      std::string known;
      for (auto& n : registry.names())
        known += (known.empty() ? "" : ", ") + n;
      throw std::invalid_argument("consumer.enabled: no consumer \"" + name +
                                  "\" is registered (registered: " +
                                  (known.empty() ? "none" : known) + ")");
    }
    out.emplace(name, std::move(c));
  }
  // A consumer the host registered but did not enable would never run:
  // refused like a name that is not registered.
  if (auto idle = registry.not_enabled(cfg.consumer.enabled); !idle.empty())
    throw std::invalid_argument(idle);
  return out;
}

} // namespace

namespace {

/// A host builds its settings in code: the checks of a file and a command
/// line, in the same words, before anything starts.
void check_and_apply(const config::settings& cfg) {
  if (auto err = config::check_settings(cfg))
    throw std::invalid_argument(*err);
  if (auto err = kafka::check_properties(cfg.kafka.properties))
    throw std::invalid_argument(*err);
  // [log] is the host's wish for EventForge's lines: applied to its logger
  // (config/logging.hpp), never to the host's own.
  log::apply(cfg);
  if (!cfg.kafka.properties.empty()) {
    // Which keys, never their values: some are secrets.
    std::string keys;
    for (auto& [k, v] : cfg.kafka.properties)
      keys += (keys.empty() ? "" : ", ") + k;
    ef::log::info("kafka: every client gets {} propert{}: {}",
                  cfg.kafka.properties.size(),
                  cfg.kafka.properties.size() == 1 ? "y" : "ies", keys);
  }
}

/// EventForge's schema, then each enabled consumer's own migrations.
void migrate_schemas(const std::string& dsn,
                     const std::map<std::string, consumer_ptr>& consumers) {
  auto applied = persistence::migrate(dsn);
  if (!applied.empty())
    ef::log::info("applied {} schema migration(s), now at version {}",
                  applied.size(), applied.back());
  for (auto& [name, c] : consumers) {
    auto own = persistence::migrate_consumer(dsn, name, c->migrations());
    if (!own.empty())
      ef::log::info("applied {} migration(s) of consumer {}, now at version {}",
                    own.size(), name, own.back());
  }
}

/// The recovery journal, which every injected crash is written to before it
/// takes effect.
std::shared_ptr<persistence::recovery_journal>
open_journal(const std::string& dsn, const config::settings& cfg,
             const std::shared_ptr<telemetry>& metrics, chaos& faults) {
  // The journal waits for the database as a partition actor does.
  auto journal = std::make_shared<persistence::recovery_journal>(
    dsn, 10000, config::retry_backoff(cfg));
  journal->on_drop([metrics](std::uint64_t n) {
    metrics->add("recovery_journal_dropped_total", {}, n);
  });
  faults.on_crash([journal](crash_point p, const crash_site& site) {
    persistence::journal_line line;
    line.what = persistence::journal_line::kind::crash;
    line.point = to_string(p);
    line.actor =
      std::string(to_string(p)).substr(0, std::string(to_string(p)).find('.'));
    line.consumer = site.consumer;
    line.order_id = site.order_id;
    line.event_id = site.event_id;
    journal->record(std::move(line));
    // Written before the crash takes effect, so that no redelivery it
    // causes can be committed before the crash is on record.
    journal->flush(std::chrono::seconds(1));
  });
  return journal;
}

/// What every actor of the tree shares, with the consumer-lead probe and
/// the lead limit the relays pace themselves by.
context_ptr make_context(const config::settings& cfg, const endpoints& ep,
                         const std::string& dsn,
                         std::shared_ptr<telemetry> metrics,
                         std::shared_ptr<chaos> faults,
                         std::shared_ptr<persistence::recovery_journal> journal,
                         std::map<std::string, consumer_ptr> consumers) {
  // Relay shards ask how far the consumers are behind every 250 ms while
  // they publish; one probe answers all of them.
  auto cluster = kafka::cluster_of(cfg, ep.kafka_brokers);
  auto lead = std::make_shared<kafka::consumer_lead>(
    cluster, cfg.kafka.topic, cfg.kafka.partitions, cfg.consumer.enabled,
    std::chrono::milliseconds(250));
  // What a partition's log holds sizes how far the relays may run ahead.
  auto lead_limit = std::make_shared<kafka::lead_limit>(
    cfg.relay.max_lead_bytes,
    [cluster, topic = cfg.kafka.topic](std::string& why,
                                       const std::atomic<bool>& stop) {
      return kafka::describe_retention(cluster, topic, 5000, why, stop);
    },
    ep.kafka_log_bytes, std::int64_t{2} * 1024 * 1024);
  lead_limit->watch();
  return std::make_shared<context>(
    context{cfg, dsn, cluster, std::move(metrics), std::move(faults),
            std::move(journal), std::move(consumers), lead, lead_limit});
}

} // namespace

eventforge_actor start(caf::actor_system& sys, const config::settings& given,
                       const endpoints& ep, std::shared_ptr<telemetry> metrics,
                       std::shared_ptr<chaos> faults,
                       std::shared_ptr<const consumer_registry> registry) {
  // A host's settings built in code: the files they name are read here, as
  // the command line reads them (a properties file with TLS or SASL is
  // never silently left out).
  auto cfg = config::with_referenced_files(given);
  check_and_apply(cfg);
  if (cfg.node.name.empty())
    cfg.node.name = config::default_node_name(cfg);
  if (!registry)
    registry = std::make_shared<const consumer_registry>(
      consumer_registry::with_builtins());
  auto consumers = enabled_consumers(cfg, *registry);
  if (!metrics)
    metrics = std::make_shared<telemetry>();
  if (!faults)
    faults = std::make_shared<chaos>(cfg.chaos, metrics);
  declare_series(*metrics, cfg);
  auto dsn = persistence::with_connect_timeout(ep.database_dsn,
                                               cfg.database.connect_timeout_s);
  // Every session of the tree says which node it is (pg_stat_activity):
  // `status` names relay owners by node, not by backend PID.
  if (dsn.find("application_name") == std::string::npos)
    dsn = persistence::with_dsn_param(
      dsn, "application_name",
      std::string(persistence::node_session_prefix) + cfg.node.name);
  migrate_schemas(dsn, consumers);
  auto journal = open_journal(dsn, cfg, metrics, *faults);
  auto ctx = make_context(cfg, ep, dsn, metrics, faults, std::move(journal),
                          std::move(consumers));
  persistence::require_fixed_setting(ctx->dsn, "relay.shards",
                                     std::to_string(cfg.relay.shards));
  if (!cfg.chaos.points.empty() && cfg.chaos.rate > 0)
    ef::log::warn("chaos enabled: rate {} seed {} at {} point(s)",
                  cfg.chaos.rate, cfg.chaos.seed, cfg.chaos.points.size());
  // The root is a supervisor like every other (supervisor_actor, which
  // extends eventforge_actor); the routes given to its children are what
  // lets it answer each message (tests/integration/embedding_test.cpp asks
  // each of them).
  auto root = sys.spawn(supervisor, std::string{"root"}, tree_children(ctx),
                        context_ptr{ctx});
  trees().enter(root->id());
  root->attach_functor([id = root->id()] { trees().leave(id); });
  return root; // a supervisor_actor is an eventforge_actor and more
}

std::size_t running_trees() {
  return trees().size();
}

} // namespace ef
