#pragma once

#include "config/options.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace ef::app {

/// Binds every config key to a subcommand as --section.key=VALUE, plus
/// --config-file=FILE, and turns them into validated settings: defaults,
/// then the file, then the command line.
class config_options {
public:
  explicit config_options(CLI::App& sub);

  /// Builds the settings; on failure returns false and sets `error` to a
  /// message that names the offending key or file line.
  bool resolve(config::settings& out, std::string& error) const;

private:
  std::string config_file_;
  std::shared_ptr<config::raw_values> cli_values_;
};

} // namespace ef::app
