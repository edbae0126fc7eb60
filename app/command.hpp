#pragma once

#include "app/cli.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

namespace ef::app {

/// One subcommand of `eventforge`. main() gives each its CLI11 subcommand
/// with every config key on it (config_options), lets it declare the
/// options of its own, and runs the one the command line names once the
/// configuration is resolved and logging is set up.
class command {
public:
  virtual ~command() = default;
  virtual const char* name() const = 0;
  virtual const char* help() const = 0;
  /// Declares the command's own arguments; the parsed values are kept in
  /// the command object until run().
  virtual void add_arguments(CLI::App&) {}
  /// The exit status: 0 done, 1 failed, 2 a usage error (the commands'
  /// own meanings are in their help and docs/operations.md).
  virtual int run(configuration& c) = 0;
};

/// Who the audit trail names for a change made from the command line: the
/// effective user, as the system knows it ($USER is unset for root in a
/// non-login shell, and anyone can set it). "cli:NAME".
std::string cli_actor();

/// Every command that runs on a resolved configuration, in the order
/// `--help` lists them. (`config-reference` takes no configuration and is
/// main()'s own.)
std::vector<std::unique_ptr<command>> commands();

// One factory per command; each lives in the file of its name.
std::unique_ptr<command> serve_command();
std::unique_ptr<command> broker_command();
std::unique_ptr<command> migrate_command();
std::unique_ptr<command> verify_command();
std::unique_ptr<command> status_command();
std::unique_ptr<command> dlq_command();
std::unique_ptr<command> consumer_command();
std::unique_ptr<command> republish_command();
std::unique_ptr<command> chaos_command();
std::unique_ptr<command> bench_command();
std::unique_ptr<command> topics_command();

/// Creates (`create`) or only checks the order and DLQ topics on
/// kafka.brokers and prints one line per topic (or, with `json`, one JSON
/// document); returns the exit status of `topics` (docs/operations.md).
/// Shared by `topics` and `migrate --kafka`.
int run_topics(const config::settings& cfg, bool create, bool json,
               int timeout_ms);

} // namespace ef::app
