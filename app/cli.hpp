#pragma once

#include <eventforge/config/caf_options.hpp>
#include <eventforge/config/options.hpp>

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace ef::app {

/// What a subcommand runs with: EventForge's settings and the CAF
/// configuration they were read from.
struct configuration {
  config::settings settings;
  /// The INI file and command line as CAF parsed them, CAF's own sections
  /// ([scheduler], [logger], ...) included. A command that needs an actor
  /// system creates it from this object (after ef::configure_actor_system),
  /// so those options take effect. CAF keeps a reference to it: it must
  /// outlive the actor system.
  config::actor_system_config caf;
};

/// Binds every config key to a subcommand as --section.key=VALUE, CAF's own
/// options likewise (group "CAF"), plus --config-file=FILE, and turns them
/// into a parsed CAF configuration and validated settings: defaults, then
/// the file, then the command line.
class config_options {
public:
  explicit config_options(CLI::App& sub);

  /// Parses the file and the command line with CAF into `out.caf` and builds
  /// `out.settings` from them; on failure returns false and sets `error` to
  /// a message that names the offending key, argument or file line.
  bool resolve(configuration& out, std::string& error) const;

  /// One --section.key=VALUE as given (or --section.key for a CAF flag).
  struct argument {
    std::string key;
    std::string value;
    bool eventforge; ///< a key of the option table, else one of CAF's
    bool flag;       ///< a CAF flag, which takes no value
  };

private:
  std::string config_file_;
  std::shared_ptr<std::vector<argument>> given_;
};

} // namespace ef::app
