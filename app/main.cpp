// eventforge: the EventForge executable. Each subcommand is a command
// object (app/command.hpp, one file each): serve, broker, migrate, verify,
// topics, status, dlq, republish, chaos, bench; and config-reference, which
// needs no configuration.

#include "app/cli.hpp"
#include "app/command.hpp"
#include "config/reference.hpp"
#include <eventforge/config/logging.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

namespace {

using ef::app::command;
using ef::app::config_options;

void setup_logging(const ef::config::settings& cfg) {
  // Logs go to stderr; stdout carries only the machine-readable lines. The
  // binary's own lines and EventForge's logger share the sink and pattern.
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  spdlog::default_logger()->sinks() = {sink};
  ef::log::use(std::make_shared<spdlog::logger>(ef::log::logger_name, sink));
  spdlog::set_level(spdlog::level::from_str(cfg.log.level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  ef::log::apply(cfg); // level, and the JSON format if asked for
}

/// `config-reference [--ini]`: prints the reference and needs no
/// configuration of its own.
void add_config_reference(CLI::App& app, bool& as_ini) {
  auto* reference = app.add_subcommand(
    "config-reference", "print the configuration reference (Markdown)");
  reference->add_flag("--ini", as_ini,
                      "print every key with its default as an INI file "
                      "instead (config/eventforge.ini.example)");
  reference->callback([&as_ini] {
    std::cout << (as_ini ? ef::config::reference_ini()
                         : ef::config::reference_markdown());
  });
}

/// CLI11 would take an unknown first word for an argument and complain
/// about something else; name it instead.
bool names_a_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-')
    return true;
  for (auto* sub : app.get_subcommands({}))
    if (sub->get_name() == argv[1])
      return true;
  std::cerr << "eventforge: unknown command \"" << argv[1] << "\" (see --help)"
            << std::endl;
  return false;
}

/// Resolves the configuration of the parsed command and runs it.
int run(command& cmd, const config_options& opts, const std::string& name) {
  ef::app::configuration cfg;
  std::string error;
  if (!opts.resolve(cfg, error)) {
    std::cerr << "eventforge: " << error << std::endl;
    return 2;
  }
  setup_logging(cfg.settings);
  try {
    return cmd.run(cfg);
  } catch (const std::exception& e) {
    ef::log::critical("{} failed: {}", name, e.what());
    return 1;
  }
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"EventForge: transactional outbox, Kafka and idempotent "
               "consumers on a supervised actor system"};
  app.require_subcommand(1);
  auto commands = ef::app::commands();
  // Every command takes every config key (--section.key=VALUE) beside its
  // own arguments.
  std::vector<std::pair<CLI::App*, std::unique_ptr<config_options>>> subs;
  for (auto& cmd : commands) {
    auto* sub = app.add_subcommand(cmd->name(), cmd->help());
    subs.emplace_back(sub, std::make_unique<config_options>(*sub));
    cmd->add_arguments(*sub);
  }
  bool as_ini = false;
  add_config_reference(app, as_ini);
  if (!names_a_command(app, argc, argv))
    return 2;
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("config-reference"))
    return 0;
  for (size_t i = 0; i < commands.size(); ++i)
    if (subs[i].first->parsed())
      return run(*commands[i], *subs[i].second, subs[i].first->get_name());
  return 2;
}
