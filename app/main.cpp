// eventforge: the EventForge executable. Subcommands:
//   serve    API + relays + consumers, on the configured or embedded services
//   broker   a standalone in-process Kafka-protocol broker for other processes
//   migrate  apply pending schema migrations and exit

#include "actors/eventforge.hpp"
#include "app/cli.hpp"
#include "app/http_frontend.hpp"
#include "app/runtime.hpp"
#include "config/reference.hpp"
#include "persistence/embedded_postgres.hpp"
#include "persistence/migrations.hpp"

#include <caf/all.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <iostream>

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
  spdlog::set_level(spdlog::level::from_str(cfg.log.level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  // Logs go to stderr; stdout carries only the machine-readable lines.
  spdlog::default_logger()->sinks().clear();
  spdlog::default_logger()->sinks().push_back(
    std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
}

int serve(const settings& cfg) {
  auto signals = block_shutdown_signals();
  ef::app::runtime rt(cfg);
  caf::actor_system_config caf_cfg;
  caf::actor_system sys{caf_cfg};
  auto root = ef::start(sys, cfg, rt.where());
  // If the tree gives up (restart intensity exceeded), the process must not
  // linger half-alive: report and shut down with a failure status.
  static std::atomic<bool> tree_failed{false};
  caf::actor_cast<caf::abstract_actor*>(root)->attach_functor(
    [](const caf::error& reason) {
      if (reason != caf::exit_reason::user_shutdown) {
        spdlog::critical("supervision tree failed: {}", to_string(reason));
        tree_failed = true;
        kill(getpid(), SIGTERM);
      }
    });
  ef::app::http_frontend http(sys, root, cfg);
  http.start();
  std::cout << "ready http=" << http.url()
            << " database=" << rt.where().database_dsn
            << " kafka=" << rt.where().kafka_brokers << std::endl;
  auto sig = wait_for_shutdown(signals);
  spdlog::info("shutting down (signal {})", sig);
  http.stop();
  caf::anon_send_exit(root, caf::exit_reason::user_shutdown);
  sys.await_all_actors_done();
  return tree_failed ? 1 : 0;
}

int broker(const settings& cfg) {
  auto signals = block_shutdown_signals();
  ef::kafka::embedded_broker b(cfg.kafka.embedded_brokers,
                               ef::app::broker_topics(cfg));
  std::cout << "ready kafka=" << b.bootstrap_servers() << std::endl;
  wait_for_shutdown(signals);
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

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"EventForge: transactional outbox, Kafka and idempotent "
               "consumers on a supervised actor system"};
  app.require_subcommand(1);
  struct command {
    CLI::App* sub;
    std::unique_ptr<ef::app::config_options> opts;
    int (*run)(const settings&);
  };
  std::vector<command> commands;
  auto add = [&](const char* name, const char* help,
                 int (*run)(const settings&)) {
    auto* sub = app.add_subcommand(name, help);
    commands.push_back(
      {sub, std::make_unique<ef::app::config_options>(*sub), run});
  };
  add("serve", "run API, relay shards and consumers", serve);
  add("broker",
      "run an in-process Kafka-protocol broker and print its "
      "bootstrap servers",
      broker);
  add("migrate", "apply pending schema migrations and exit", migrate);
  app
    .add_subcommand("config-reference",
                    "print the configuration reference (Markdown)")
    ->callback([] { std::cout << ef::config::reference_markdown(); });
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
    settings cfg;
    std::string error;
    if (!c.opts->resolve(cfg, error)) {
      std::cerr << "eventforge: " << error << std::endl;
      return 2;
    }
    setup_logging(cfg);
    try {
      return c.run(cfg);
    } catch (const std::exception& e) {
      spdlog::critical("{} failed: {}", c.sub->get_name(), e.what());
      return 1;
    }
  }
  return 2;
}
