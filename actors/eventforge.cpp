#include <eventforge/actors/eventforge.hpp>

#include "actors/api_worker.hpp"
#include "actors/crash_log.hpp"
#include "actors/dlq_handler.hpp"
#include "actors/gauge_sampler.hpp"
#include "actors/group_member.hpp"
#include "actors/janitor.hpp"
#include "actors/relay_shard.hpp"
#include "actors/repairer.hpp"
#include "actors/supervisor.hpp"
#include "config/backoff.hpp"
#include "persistence/dsn.hpp"
#include "persistence/fixed_settings.hpp"
#include "persistence/migrations.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/config/options.hpp>
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/atoms.hpp>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace ef {

namespace {

// Blocking actors (libpq, librdkafka) are detached; every actor is linked to
// its supervisor so the tree lives and dies as one.
constexpr auto blocking_child = caf::detached + caf::linked;

/// A child that is itself a supervisor of `children`.
child_spec sub_supervisor(std::string name, std::vector<child_spec> children,
                          context_ptr ctx, std::string route = {}) {
  return {"supervisor", name,
          [=](caf::event_based_actor* self) {
            return self->spawn<caf::linked>(supervisor, name, children, ctx);
          },
          route};
}

std::vector<child_spec> api_workers(const context_ptr& ctx) {
  std::vector<child_spec> out;
  for (int i = 0; i < ctx->cfg.api.workers; ++i)
    out.push_back({"api", "api-" + std::to_string(i),
                   [=](caf::event_based_actor* self) {
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
                   [=](caf::event_based_actor* self) {
                     return self->spawn<blocking_child>(relay_shard, ctx, s);
                   },
                   ""});
  return out;
}

std::vector<child_spec> consumer_group(const context_ptr& ctx,
                                       const std::string& name) {
  return {{"group-member", "group-member",
           [=](caf::event_based_actor* self) {
             return self->spawn<blocking_child>(group_member, ctx, name);
           },
           ""}};
}

/// Zero-valued series for every label this configuration knows of.
void declare_series(telemetry& m, const config::settings& cfg) {
  for (auto& c : cfg.consumer.enabled)
    for (auto name :
         {"consumer_deliveries_total", "consumer_applied_total",
          "consumer_duplicates_suppressed_total", "consumer_retries_total",
          "consumer_rebalances_total", "consumer_positions_lost_total",
          "consumer_fetch_stalls_total", "consumer_deferred_total"})
      m.declare(name, {{"consumer", c}});
  for (auto& c : cfg.consumer.enabled)
    for (auto name : {"consumer_batch_size", "consumer_handler_seconds",
                      "end_to_end_seconds"})
      m.declare(name, {{"consumer", c}});
  for (auto name :
       {"api_batch_size", "relay_batch_size", "relay_publish_ack_seconds",
        "relay_claim_to_mark_seconds", "outbox_publish_delay_seconds"})
    m.declare(name);
  // Every kind of supervised actor, by the reason classes a restart has.
  for (auto kind :
       {"supervisor", "api", "relay", "group-member", "partition",
        "dlq-handler", "gauge-sampler", "lag-sampler", "janitor", "repairer"})
    for (auto reason : {"injected", "db_unavailable", "exception"})
      m.declare("actor_restarts_total", {{"kind", kind}, {"reason", reason}});
  for (int s = 0; s < cfg.relay.shards; ++s) {
    auto shard = std::to_string(s);
    m.declare("relay_published_total", {{"shard", shard}});
    m.declare("relay_publish_errors_total", {{"shard", shard}});
    m.set("relay_waiting_for_consumers", {{"shard", shard}}, 0);
  }
  for (auto outcome : {"created", "replayed"})
    m.declare("api_orders_total", {{"outcome", outcome}});
  m.declare("api_commands_expired_total");
  m.declare("recovery_journal_dropped_total");
  for (auto table : {"outbox", "processed_events", "recovery_journal",
                     "idempotency_keys", "dlq_events"})
    m.declare("retention_deleted_total", {{"table", table}});
  for (auto reason : {"consumer_gap", "broker_epoch"})
    m.declare("repair_republished_total", {{"reason", reason}});
  m.declare("broker_epochs_total");
}

} // namespace

counter_map counters(caf::actor_system& sys, const eventforge_actor& root) {
  counter_map out;
  caf::scoped_actor self{sys};
  self->request(root, std::chrono::seconds(10), stats_atom::value)
    .receive([&](counter_map& m) { out = m; }, [&](caf::error&) {});
  return out;
}

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

void configure_actor_system(caf::actor_system_config& cfg) {
#if defined(EF_TSAN_BUILD)
  // CAF 0.17's default work-stealing scheduler passes jobs between worker
  // threads through atomics inside libcaf_core, which is not instrumented:
  // TSan would report every hand-over of an actor or message as a race. The
  // work-sharing scheduler hands jobs over under a mutex, which TSan sees.
  cfg.set("scheduler.policy", caf::atom("sharing"));
#else
  // Work sharing unless the host chose a policy. An idle work-stealing
  // worker polls: 100 tries, then 500 sleeps of 50 us, then sleeps of 10 ms,
  // and every message starts that over. EventForge's actors exchange a few
  // messages per order, so at 100 orders/s the four workers spent most of
  // their time in those 50 us sleeps: serve took 6.1 ms of CPU and 403
  // context switches per order, against 3.3 ms and 114 with work sharing,
  // whose idle workers wait on a condition variable
  // (docs/performance.md, "Cost per order").
  if (!caf::get_if<caf::atom_value>(&cfg.content, "scheduler.policy"))
    cfg.set("scheduler.policy", caf::atom("sharing"));
#endif
  // So that sys.render(err) names the cause ("ef_api: not_found (order_id:
  // no such order)") instead of printing codes.
  cfg.add_error_category(
    api_error_category(),
    [](std::uint8_t code, caf::atom_value, const caf::message& context) {
      std::string out = "ef_api: ";
      out += to_string(static_cast<api_errc>(code));
      if (context.match_elements<std::string, std::string>()) {
        auto& field = context.get_as<std::string>(0);
        out += " (";
        if (!field.empty())
          out += field + ": ";
        out += context.get_as<std::string>(1) + ")";
      }
      return out;
    });
  cfg.add_error_category(
    db_error_category(),
    [](std::uint8_t code, caf::atom_value, const caf::message&) {
      return std::string("ef_db: database ") +
             persistence::to_string(static_cast<persistence::db_errc>(code));
    });
  cfg.add_error_category(
    chaos_error_category(),
    [](std::uint8_t code, caf::atom_value, const caf::message& context) {
      std::string out = "ef_chaos: ";
      out += to_string(static_cast<chaos_errc>(code));
      if (context.match_elements<std::string>())
        out += " at " + context.get_as<std::string>(0);
      return out;
    });
}

namespace {

/// The enabled consumers, by name; throws std::invalid_argument naming the
/// first enabled name that is not registered.
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
  return out;
}

} // namespace

eventforge_actor start(caf::actor_system& sys, const config::settings& cfg,
                       const endpoints& ep, std::shared_ptr<telemetry> metrics,
                       std::shared_ptr<chaos> faults,
                       std::shared_ptr<const consumer_registry> registry) {
  // A host builds its settings in code: the checks of a file and a command
  // line, in the same words, before anything starts.
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
  // The journal waits for the database as a partition actor does.
  auto journal = std::make_shared<persistence::recovery_journal>(
    dsn, 10000, config::retry_backoff(cfg));
  journal->on_drop([metrics](std::uint64_t n) {
    metrics->add("recovery_journal_dropped_total", {}, n);
  });
  faults->on_crash([journal](crash_point p, const crash_site& site) {
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
  auto ctx = std::make_shared<context>(
    context{cfg, dsn, cluster, metrics, faults, journal, std::move(consumers),
            lead, lead_limit});
  persistence::require_fixed_setting(ctx->dsn, "relay.shards",
                                     std::to_string(cfg.relay.shards));
  if (!cfg.chaos.points.empty() && cfg.chaos.rate > 0)
    ef::log::warn("chaos enabled: rate {} seed {} at {} point(s)",
                  cfg.chaos.rate, cfg.chaos.seed, cfg.chaos.points.size());
  std::vector<child_spec> top;
  top.push_back(sub_supervisor("api", api_workers(ctx), ctx, "orders"));
  top.push_back(sub_supervisor("relays", relay_shards(ctx), ctx));
  top.push_back(
    sub_supervisor("dlq",
                   {{"dlq-handler", "dlq-handler",
                     [=](caf::event_based_actor* self) {
                       return caf::actor_cast<caf::actor>(
                         self->spawn<blocking_child>(dlq_handler, ctx));
                     },
                     "dlq"}},
                   ctx, "dlq"));
  top.push_back(
    sub_supervisor("maintenance",
                   {{"janitor", "janitor",
                     [=](caf::event_based_actor* self) {
                       return self->spawn<blocking_child>(janitor, ctx);
                     },
                     ""},
                    {"repairer", "repairer",
                     [=](caf::event_based_actor* self) {
                       return self->spawn<blocking_child>(repairer, ctx);
                     },
                     ""},
                    {"gauge-sampler", "gauge-sampler",
                     [=](caf::event_based_actor* self) {
                       return self->spawn<blocking_child>(gauge_sampler, ctx);
                     },
                     ""},
                    {"lag-sampler", "lag-sampler",
                     [=](caf::event_based_actor* self) {
                       return self->spawn<blocking_child>(lag_sampler, ctx);
                     },
                     ""}},
                   ctx));
  for (auto& name : cfg.consumer.enabled)
    top.push_back(
      sub_supervisor("consumer-" + name, consumer_group(ctx, name), ctx));
  // The root's behaviour is the generic supervisor's; the routes given to
  // its children above are what makes it answer eventforge_actor's
  // messages (tests/integration/embedding_test.cpp asks each of them).
  auto root = sys.spawn(supervisor, std::string{"root"}, std::move(top),
                        context_ptr{ctx});
  trees().enter(root->id());
  root->attach_functor([id = root->id()] { trees().leave(id); });
  return caf::actor_cast<eventforge_actor>(root);
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

std::size_t running_trees() {
  return trees().size();
}

} // namespace ef
