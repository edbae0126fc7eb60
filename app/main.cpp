// eventforge: the EventForge executable. Subcommands:
//   serve    API + relays + consumers, on the configured or embedded services
//   broker   a standalone in-process Kafka-protocol broker for other processes
//   migrate  apply pending schema migrations and exit

#include "actors/dlq_operations.hpp"
#include "actors/event_log.hpp"
#include "app/cli.hpp"
#include "app/embedded/topics.hpp"
#include "app/page/ops_view.hpp"
#include "app/tools/bench_runner.hpp"
#include "app/tools/broker_control.hpp"
#include "app/tools/chaos_runner.hpp"
#include "config/crash_points.hpp"
#include "config/reference.hpp"
#include "persistence/db_error.hpp"
#include "persistence/dsn.hpp"
#include "persistence/embedded_postgres.hpp"
#include "persistence/migrations.hpp"
#include "persistence/repair_store.hpp"
#include <eventforge/actors/eventforge.hpp>
#include <eventforge/config/logging.hpp>
#include <eventforge/embedded/runtime.hpp>
#include <eventforge/embedded/verifier.hpp>
#include <eventforge/http/frontend.hpp>

#include <caf/all.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

namespace {

using ef::config::settings;

/// Blocks the shutdown signals in every thread (call before any thread
/// starts); wait_for_shutdown() then receives them synchronously.
sigset_t block_shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

int wait_for_shutdown(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

void setup_logging(const settings& cfg) {
  // Logs go to stderr; stdout carries only the machine-readable lines. The
  // binary's own lines and EventForge's logger share the sink and pattern.
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  spdlog::default_logger()->sinks() = {sink};
  ef::log::use(std::make_shared<spdlog::logger>(ef::log::logger_name, sink));
  spdlog::set_level(spdlog::level::from_str(cfg.log.level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  ef::log::apply(cfg); // level, and the JSON format if asked for
}

/// `caf_cfg`: the parsed INI file and command line, so that their CAF
/// options ([scheduler], [logger], ...) apply to the actor system.
int serve(const settings& cfg, caf::actor_system_config& caf_cfg) {
  auto signals = block_shutdown_signals();
  ef::app::runtime rt(cfg);
  ef::configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  ef::log::info("actor system: {} scheduler threads, policy {}",
                sys.scheduler().num_workers(),
                caf::to_string(caf::get_or(caf_cfg, "scheduler.policy",
                                           caf::atom("stealing"))));
  auto metrics = std::make_shared<ef::telemetry>();
  // Shared with the HTTP front: the recovery page's scenarios arm them.
  auto faults = std::make_shared<ef::chaos>(cfg.chaos, metrics);
  auto root = ef::start(sys, cfg, rt.where(), metrics, faults);
  // If the tree gives up (restart intensity exceeded), the process must not
  // linger half-alive: report and shut down with a failure status.
  static std::atomic<bool> tree_failed{false};
  caf::actor_cast<caf::abstract_actor*>(root)->attach_functor(
    [&sys](const caf::error& reason) {
      if (reason != caf::exit_reason::user_shutdown) {
        ef::log::critical("supervision tree failed: {}", sys.render(reason));
        tree_failed = true;
        kill(getpid(), SIGTERM);
      }
    });
  // The page's Kafka scenarios fail the in-process cluster, if it is ours.
  std::function<std::string(const std::string&)> broker_faults;
  if (auto* b = rt.broker())
    broker_faults = [b](const std::string& c) { return b->run_command(c); };
  ef::app::http_frontend http(sys, root, cfg, metrics, rt.where(), faults,
                              broker_faults);
  try {
    http.start();
  } catch (...) {
    // A refusal to start (a port in use, http.max-connections past the
    // descriptor limit): the tree stops on purpose, so its end is no
    // failure to report, and main() prints the one line that says why.
    http.stop();
    ef::stop(sys, root, std::chrono::seconds(60));
    throw;
  }
  // Ready means an order flows end to end: the consumer groups' first join
  // waits out the broker's initial rebalance delay (3 s), and an order
  // before it would wait that long for its effects.
  auto join_wait = std::chrono::milliseconds(2 * cfg.kafka.session_timeout_ms);
  if (!ef::await_consumers_assigned(*metrics, cfg, join_wait))
    ef::log::warn("the consumer groups have no assignment after {} ms; ready "
                  "anyway (orders are taken; their effects wait for the "
                  "groups)",
                  join_wait.count());
  std::cout << "ready http=" << http.url() << " database="
            << ef::persistence::redact_password(rt.where().database_dsn)
            << " kafka=" << rt.where().kafka_brokers << std::endl;
  auto sig = wait_for_shutdown(signals);
  auto timeout = std::chrono::milliseconds(cfg.shutdown.drain_timeout_ms);
  // Machine-readable, like the ready line: the signal was taken, so a
  // second one is a second signal (two pending SIGTERMs would be one).
  std::cout << "stopping signal=" << sig
            << " drain-timeout-ms=" << timeout.count() << std::endl;
  ef::log::info("shutting down (signal {}): draining for at most {} ms; a "
                "second signal stops at once",
                sig, timeout.count());
  // A second signal, or a stop that outlives the drain timeout plus a grace
  // for closing clients (an actor blocked in a database call cannot stop),
  // ends the process at once: what it held is redelivered after the next
  // start, so nothing is lost.
  auto hard_deadline =
    std::chrono::steady_clock::now() + timeout + std::chrono::seconds(5);
  std::atomic<bool> stopped{false};
  std::thread second_signal([&] {
    timespec slice{0, 100 * 1000 * 1000};
    while (!stopped) {
      if (sigtimedwait(&signals, nullptr, &slice) > 0) {
        ef::log::warn("second signal: stopping now without draining");
        std::_Exit(1);
      }
      if (std::chrono::steady_clock::now() > hard_deadline) {
        ef::log::warn("the tree did not stop within the drain timeout plus "
                      "5 s; stopping now");
        std::_Exit(1);
      }
    }
  });
  http.stop(); // no new requests; those in flight are answered
  if (!tree_failed) {
    // The root's children report first, naming whatever did not drain.
    auto report = ef::drain(sys, root, timeout + 2 * ef::drain_grace_per_level);
    if (report) {
      ef::log::info("drained: relays finished their batches, consumers "
                    "applied and committed what they held");
    } else {
      std::string which;
      for (auto& n : report.not_drained)
        which += (which.empty() ? "" : "; ") + n;
      ef::log::warn("drain not finished ({}); stopping anyway (the rest is "
                    "redelivered after restart)",
                    which);
    }
  }
  if (!ef::stop(sys, root, std::chrono::seconds(60)))
    ef::log::warn("the supervision tree did not stop within 60 s");
  stopped = true;
  second_signal.join();
  return tree_failed ? 1 : 0;
}

int broker(const settings& cfg) {
  auto signals = block_shutdown_signals();
  ef::kafka::embedded_broker b(cfg.kafka.embedded_brokers,
                               ef::app::broker_topics(cfg));
  std::cout << "ready kafka=" << b.bootstrap_servers()
            << " brokers=" << b.brokers() << " faults=stdin" << std::endl;
  // Fault commands on stdin (docs/chaos.md): whoever started the broker,
  // and no one else, may fail it.
  std::atomic<bool> stop{false};
  std::thread control(
    [&] { ef::app::serve_fault_commands(b, 0, std::cout, stop); });
  wait_for_shutdown(signals);
  stop = true;
  control.join();
  return 0;
}

int migrate(const settings& cfg) {
  std::unique_ptr<ef::persistence::embedded_postgres> pg;
  auto dsn = cfg.database.url;
  if (dsn.empty()) {
    pg = std::make_unique<ef::persistence::embedded_postgres>(
      ef::persistence::embedded_postgres::options{
        cfg.database.data_dir, cfg.database.pg_bin_dir, cfg.database.port});
    dsn = pg->dsn();
  }
  auto applied = ef::persistence::migrate(dsn);
  std::cout << "schema at version "
            << ef::persistence::migrations().back().version << " ("
            << applied.size() << " applied now)" << std::endl;
  return 0;
}

/// `eventforge dlq ACTION [ID]`: operator access to the DLQ of a system.
struct dlq_args {
  std::string action;
  std::int64_t id = 0;
  std::string status;
  std::string group;
  bool dry_run = false;
};

/// `eventforge dlq replay|discard`'s exit status: 0 done (or a replay whose
/// publish the DLQ handler finishes), 1 refused or nothing changed, 3 the
/// outcome is unknown (the message says how to settle it).
int dlq_exit_code(const ef::dlq_operations::outcome& r) {
  using result = ef::dlq_operations::result;
  switch (r.what) {
  case result::done:
  case result::pending:
    return 0;
  case result::unknown:
    return 3;
  case result::refused:
  case result::unavailable:
    break;
  }
  return 1;
}

int dlq_command_line(const settings& cfg, const dlq_args& a) {
  // Only a replay publishes: list, show and discard read and write the
  // database alone.
  bool publishes = a.action == "replay" && !a.dry_run;
  if (cfg.database.url.empty() || (publishes && cfg.kafka.brokers.empty())) {
    std::cerr << "eventforge: dlq " << a.action << " needs --database.url"
              << (publishes ? " and --kafka.brokers" : "")
              << " (the running system's, as printed in its ready line)"
              << std::endl;
    return 2;
  }
  ef::dlq_operations ops(cfg.database.url,
                         ef::kafka::cluster_of(cfg, cfg.kafka.brokers),
                         cfg.kafka.delivery_timeout_ms);
  auto user = std::getenv("USER");
  auto actor = std::string("cli:") + (user ? user : "unknown");
  auto& store = ops.store();
  if (a.action == "list") {
    for (auto& g : store.groups())
      std::cout << "group " << g.fingerprint << ": " << g.count
                << " parked, oldest " << static_cast<long>(g.oldest_age_seconds)
                << " s\n";
    for (auto& e : store.list(a.status, 1000))
      std::cout << e.id << " " << e.status << " " << e.consumer << " event "
                << e.event_id << " order " << e.order_key << " "
                << e.error_class << ": " << e.error_message << "\n";
    return 0;
  }
  if (a.action == "show") {
    auto e = store.get(a.id);
    if (!e) {
      std::cerr << "eventforge: no DLQ entry " << a.id << std::endl;
      return 1;
    }
    std::cout << ef::to_json(*e) << std::endl;
    return 0;
  }
  if (a.action == "replay" && !a.group.empty()) {
    auto entries = store.in_group(a.group);
    if (entries.empty()) {
      std::cerr << "eventforge: no parked entries in group \"" << a.group
                << "\"" << std::endl;
      return 1;
    }
    int failed = 0;
    for (auto& e : entries) {
      if (a.dry_run) {
        std::cout << "would replay " << e.id << " (event " << e.event_id
                  << ")\n";
        continue;
      }
      auto r = ops.replay(e.id, actor);
      std::cout << r.message << "\n";
      failed += dlq_exit_code(r) == 0 ? 0 : 1;
    }
    return failed == 0 ? 0 : 1;
  }
  if (a.action == "replay" || a.action == "discard") {
    if (a.dry_run) {
      std::cout << "would " << a.action << " " << a.id << "\n";
      return 0;
    }
    auto r =
      a.action == "replay" ? ops.replay(a.id, actor) : ops.discard(a.id, actor);
    auto code = dlq_exit_code(r);
    (code == 0 ? std::cout : std::cerr) << r.message << std::endl;
    return code;
  }
  std::cerr << "eventforge: unknown dlq action \"" << a.action
            << "\" (list, show, replay, discard)" << std::endl;
  return 2;
}

/// `eventforge republish`: queue sent events a consumer has not applied
/// (lost by the broker) for the relays to publish again, by hand.
struct republish_args {
  std::vector<std::string> consumers;
  std::optional<std::int64_t> from_seq, to_seq;
  std::optional<std::string> since, until;
  bool dry_run = false;
};

int republish_command(const settings& cfg, const republish_args& a) {
  if (cfg.database.url.empty()) {
    std::cerr << "eventforge: republish needs --database.url (the running "
                 "system's, as printed in its ready line)"
              << std::endl;
    return 2;
  }
  ef::persistence::republish_scope scope;
  scope.consumers = a.consumers.empty() ? cfg.consumer.enabled : a.consumers;
  for (auto& c : scope.consumers)
    if (std::find(cfg.consumer.enabled.begin(), cfg.consumer.enabled.end(),
                  c) == cfg.consumer.enabled.end()) {
      std::cerr << "eventforge: --consumer " << c
                << " is not an enabled consumer (consumer.enabled)"
                << std::endl;
      return 2;
    }
  if (a.from_seq && a.to_seq && *a.from_seq > *a.to_seq) {
    std::cerr << "eventforge: --from-seq must not exceed --to-seq" << std::endl;
    return 2;
  }
  scope.from_seq = a.from_seq;
  scope.to_seq = a.to_seq;
  scope.since = a.since;
  scope.until = a.until;
  auto user = std::getenv("USER");
  auto actor = std::string("cli:") + (user ? user : "unknown");
  ef::persistence::repair_store store(cfg.database.url);
  long n = 0;
  try {
    n = store.republish(scope, a.dry_run, actor);
  } catch (const ef::persistence::db_error& e) {
    std::cerr << "eventforge: republish refused, nothing changed: " << e.what()
              << std::endl;
    return 1;
  }
  if (a.dry_run)
    std::cout << "would republish " << n << " event(s) (" << scope.describe()
              << "); run again without --dry-run to queue them" << std::endl;
  else
    std::cout << "queued " << n << " event(s) for republishing ("
              << scope.describe()
              << "); the relays publish them in seq order with their "
                 "original IDs"
              << std::endl;
  return 0;
}

int status_command(const settings& cfg) {
  // Without a broker the database's part is shown and the lag is named as
  // not read.
  if (cfg.database.url.empty()) {
    std::cerr << "eventforge: status needs --database.url, and --kafka.brokers "
                 "for consumer lag (the running system's, as printed in its "
                 "ready line)"
              << std::endl;
    return 2;
  }
  auto v = ef::app::read_ops_view(cfg, cfg.database.url, cfg.kafka.brokers);
  std::cout << ef::app::to_text(v, cfg);
  return 0;
}

int verify_command(const settings& cfg) {
  if (cfg.database.url.empty() || cfg.kafka.brokers.empty()) {
    std::cerr << "eventforge: verify needs --database.url and --kafka.brokers "
                 "(the running system's, as printed in its ready line): I5 "
                 "compares committed offsets with the broker's log ends"
              << std::endl;
    return 2;
  }
  auto result = ef::app::verify(cfg, cfg.database.url, cfg.kafka.brokers);
  std::cout << ef::app::to_text(result);
  return result.ok() ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"EventForge: transactional outbox, Kafka and idempotent "
               "consumers on a supervised actor system"};
  app.require_subcommand(1);
  using ef::app::configuration;
  struct command {
    CLI::App* sub;
    std::unique_ptr<ef::app::config_options> opts;
    std::function<int(configuration&)> run;
  };
  std::vector<command> commands;
  auto add = [&](const char* name, const char* help,
                 std::function<int(configuration&)> run) {
    auto* sub = app.add_subcommand(name, help);
    commands.push_back(
      {sub, std::make_unique<ef::app::config_options>(*sub), std::move(run)});
    return sub;
  };
  // The commands that create no actor system need the settings alone.
  auto settings_only = [](int (*run)(const settings&)) {
    return [run](configuration& c) { return run(c.settings); };
  };
  add("serve", "run API, relay shards and consumers",
      [](configuration& c) { return serve(c.settings, c.caf); });
  add("broker",
      "run an in-process Kafka-protocol broker and print its "
      "bootstrap servers",
      settings_only(broker));
  add("migrate", "apply pending schema migrations and exit",
      settings_only(migrate));
  add("verify", "check invariants I1-I5 of a system from durable state",
      settings_only(verify_command));
  add("status", "one screen for operators: outbox, relay owners, lag, DLQ",
      settings_only(status_command));
  dlq_args dlq;
  auto* dlq_sub =
    add("dlq", "list, show, replay or discard DLQ entries",
        [&](configuration& c) { return dlq_command_line(c.settings, dlq); });
  dlq_sub->add_option("action", dlq.action, "list, show, replay or discard")
    ->required();
  dlq_sub->add_option("id", dlq.id, "DLQ entry id (show, replay, discard)");
  dlq_sub->add_option("--status", dlq.status,
                      "list: only entries in this status");
  dlq_sub->add_option("--group", dlq.group,
                      "replay: every parked entry with this fingerprint");
  dlq_sub->add_flag("--dry-run", dlq.dry_run,
                    "replay/discard: show what would happen");
  republish_args rep;
  auto* rep_sub =
    add("republish",
        "publish again sent events that consumers have not applied (e.g. lost "
        "by the broker); audited",
        [&](configuration& c) { return republish_command(c.settings, rep); });
  rep_sub->add_option("--consumer", rep.consumers,
                      "only events this consumer has not applied (repeat; "
                      "default: every enabled consumer)");
  rep_sub->add_option("--from-seq", rep.from_seq, "lowest outbox seq")
    ->check(CLI::NonNegativeNumber);
  rep_sub->add_option("--to-seq", rep.to_seq, "highest outbox seq")
    ->check(CLI::NonNegativeNumber);
  rep_sub->add_option("--since", rep.since,
                      "events created at or after (e.g. 2026-12-02T10:00Z)");
  rep_sub->add_option("--until", rep.until, "events created before");
  rep_sub->add_flag("--dry-run", rep.dry_run,
                    "only count what would be queued (recorded too)");
  ef::app::chaos_plan plan;
  std::optional<std::uint64_t> seed;
  std::optional<double> rate;
  auto* chaos =
    add("chaos", "run the whole system under injected crashes, verify, report",
        [&](configuration& c) {
          settings cfg = c.settings;
          // Without explicit choices every crash point is on but the DLQ's,
          // which only a parked record or a replay reaches (chaos places
          // valid orders).
          if (cfg.chaos.points.empty())
            for (std::string name : ef::config::crash_point_names)
              if (name.rfind("dlq.", 0) != 0)
                cfg.chaos.points.push_back(name);
          if (seed)
            cfg.chaos.seed = *seed;
          if (rate)
            cfg.chaos.rate = *rate;
          else if (cfg.chaos.rate == 0)
            cfg.chaos.rate = 0.01;
          if (cfg.http.port == 8080)
            cfg.http.port = 0; // never collide with a running serve
          return ef::app::run_chaos(cfg, plan, c.caf);
        });
  chaos->add_option("--orders", plan.orders, "orders to place over HTTP")
    ->check(CLI::Range(0, 10000000));
  chaos
    ->add_option("--broker-restarts", plan.broker_restarts,
                 "replace the in-process broker by an empty one this many "
                 "times while the orders stream in")
    ->check(CLI::Range(0, 100));
  chaos
    ->add_option("--backlog", plan.backlog,
                 "orders written straight into the outbox before the run, "
                 "as if piled up while the pipeline was stopped")
    ->check(CLI::Range(0L, 100000000L));
  chaos
    ->add_option("--broker-faults", plan.broker_faults,
                 "Kafka faults to inject in turn, drawn from the seed: "
                 "leader, down, rtt, errors, coordinator, or all "
                 "(comma-separated; in-process broker, "
                 "--kafka.embedded-brokers=3 as a real cluster)")
    ->delimiter(',');
  chaos
    ->add_option("--broker-fault-count", plan.broker_fault_count,
                 "how many Kafka faults, evenly spaced over the orders")
    ->check(CLI::Range(1, 100000));
  chaos->add_flag("--backlog-past-retention", plan.backlog_past_retention,
                  "publish the backlog while the consumers are down, so the "
                  "broker trims it before they read it");
  chaos->add_option("--concurrency", plan.concurrency, "HTTP clients")
    ->check(CLI::Range(1, 256));
  chaos
    ->add_option("--cancel-share", plan.cancel_share,
                 "share of orders cancelled afterwards")
    ->check(CLI::Range(0.0, 1.0));
  chaos
    ->add_option("--timeout", plan.timeout_s, "seconds to wait for quiescence")
    ->check(CLI::Range(1, 86400));
  chaos->add_option("--report", plan.report_file, "write the report as JSON");
  chaos->add_option("--seed", seed, "shorthand for --chaos.seed");
  chaos->add_option("--rate", rate, "shorthand for --chaos.rate")
    ->check(CLI::Range(0.0, 1.0));
  ef::app::bench_plan bench;
  static std::vector<std::string> compare;
  auto* bench_sub =
    add("bench",
        "measure throughput, latency and a backlog drain against pgbench "
        "baselines of the same SQL; verify; report",
        [&](configuration& c) {
          settings cfg = c.settings;
          if (!compare.empty()) {
            // LABEL=FILE, or FILE alone (then the file names the column).
            std::vector<std::string> labels, paths;
            for (auto& x : compare) {
              auto eq = x.find('=');
              labels.push_back(eq == std::string::npos ? x : x.substr(0, eq));
              paths.push_back(eq == std::string::npos ? x : x.substr(eq + 1));
            }
            return ef::app::compare_bench_reports(labels, paths);
          }
          if (cfg.http.port == 8080)
            cfg.http.port = 0; // never collide with a running serve
          return ef::app::run_bench(cfg, bench, c.caf);
        });
  bench_sub
    ->add_option("--seconds", bench.seconds,
                 "length of each pgbench and HTTP phase")
    ->check(CLI::Range(1, 3600));
  bench_sub
    ->add_option("--clients", bench.clients,
                 "keep-alive HTTP clients, one phase each (repeat or "
                 "comma-separate)")
    ->delimiter(',')
    ->check(CLI::Range(1, 4096));
  bench_sub
    ->add_option("--rate", bench.rate,
                 "orders/s of the latency phase (default: half of the first "
                 "HTTP phase)")
    ->check(CLI::Range(0.0, 1e6));
  bench_sub
    ->add_option("--backlog", bench.backlog,
                 "orders written while the pipeline is stopped, then drained "
                 "(0: skip)")
    ->check(CLI::Range(0L, 100000000L));
  bench_sub
    ->add_option("--seed-orders", bench.seed_orders,
                 "orders in the scratch schema of the consumer and relay "
                 "baselines")
    ->check(CLI::Range(1000L, 100000000L));
  bench_sub
    ->add_option("--cost-rates", bench.cost_rates,
                 "orders/s of the cost phase's fixed-rate runs (repeat or "
                 "comma-separate)")
    ->delimiter(',')
    ->check(CLI::Range(1.0, 1e6));
  bench_sub
    ->add_option("--cost-seconds", bench.cost_seconds,
                 "seconds of each cost run (0: skip the cost phase)")
    ->check(CLI::Range(0, 3600));
  bench_sub
    ->add_option("--idle-seconds", bench.idle_seconds,
                 "seconds the idle pipeline is measured in the cost phase")
    ->check(CLI::Range(1, 3600));
  bench_sub
    ->add_option("--lone-orders", bench.lone_orders,
                 "orders sent one at a time at random gaps of 0.2-5 s right "
                 "after start, for the latency of a lone order (0: skip)")
    ->check(CLI::Range(0, 10000));
  bench_sub
    ->add_option("--timeout", bench.timeout_s, "seconds to wait for each drain")
    ->check(CLI::Range(1, 86400));
  bench_sub->add_option("--report", bench.report_path,
                        "write every figure as JSON");
  bench_sub
    ->add_option("--compare", compare,
                 "run nothing: print the main figures of these reports "
                 "(LABEL=FILE or FILE, repeat or comma-separate) side by side")
    ->delimiter(',');
  static bool as_ini = false;
  auto* reference = app.add_subcommand(
    "config-reference", "print the configuration reference (Markdown)");
  reference->add_flag("--ini", as_ini,
                      "print every key with its default as an INI file "
                      "instead (config/eventforge.ini.example)");
  reference->callback([] {
    std::cout << (as_ini ? ef::config::reference_ini()
                         : ef::config::reference_markdown());
  });
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (auto* sub : app.get_subcommands({}))
      known = known || sub->get_name() == argv[1];
    if (!known) {
      std::cerr << "eventforge: unknown command \"" << argv[1]
                << "\" (see --help)" << std::endl;
      return 2;
    }
  }
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("config-reference"))
    return 0;
  for (auto& c : commands) {
    if (!c.sub->parsed())
      continue;
    configuration cfg;
    std::string error;
    if (!c.opts->resolve(cfg, error)) {
      std::cerr << "eventforge: " << error << std::endl;
      return 2;
    }
    setup_logging(cfg.settings);
    try {
      return c.run(cfg);
    } catch (const std::exception& e) {
      ef::log::critical("{} failed: {}", c.sub->get_name(), e.what());
      return 1;
    }
  }
  return 2;
}
