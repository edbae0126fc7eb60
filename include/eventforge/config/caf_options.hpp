#pragma once

#include <eventforge/config/options.hpp>

#include <caf/actor_system_config.hpp>
#include <caf/config_option_set.hpp>
#include <caf/error.hpp>
#include <caf/settings.hpp>

#include <string>

namespace ef::config {

/// Declares every key of the option table on a CAF option set, under its
/// section and with its CAF type (`[api] workers`, `--api.workers=N`). A host
/// calls it once from the constructor of its actor_system_config subclass
/// (custom_options_ is protected; a subclass is CAF's idiom), so that one INI
/// file and one command line configure CAF and EventForge.
void declare_options(caf::config_option_set& opts);

/// A CAF configuration with EventForge's options declared. Hosts without
/// options of their own use it as is; ef::configure_actor_system() adds what
/// the actor system needs (error categories) before it is created.
class actor_system_config : public caf::actor_system_config {
public:
  actor_system_config();

  /// Every option CAF and EventForge declare here (for binding them on a
  /// command line of one's own, as `eventforge` does).
  const caf::config_option_set& option_set() const { return custom_options_; }
};

/// EventForge's settings from a parsed CAF configuration: defaults, then the
/// INI file `ini_path` (none if empty), then what `cfg.content` holds in
/// EventForge's sections (the command line, which wins, and whatever the
/// host set). CAF itself drops an INI value of the wrong type and keeps
/// unknown keys; EventForge's rule is that bad input stops start-up. So the
/// file is read again without types and every value in EventForge's sections
/// goes through the option table: an unknown key, a value of the wrong type
/// or out of range is an error naming the key (and the file, if it came from
/// there). Other sections ([scheduler], [logger], a host's own) are CAF's and
/// the host's business.
build_result read_settings(const caf::actor_system_config& cfg,
                           const std::string& ini_path);

/// The configuration file a parsed `cfg` was read from: what --config-file
/// named, or CAF's fallback (caf-application.ini) if that exists; "" for
/// none. Pass it to read_settings() and check_section(): a file the
/// operator named but that cannot be read is an error there, CAF's fallback
/// that does not exist is no file at all.
std::string config_file_of(const caf::actor_system_config& cfg);

/// A host's own section checked as strictly as EventForge checks its own:
/// every key of [`section`] in the file `ini_path` (none if empty) and on
/// the command line must be declared on `cfg` (an opt_group of that name)
/// and hold a value of its declared type. CAF itself keeps an undeclared
/// key and drops a value of the wrong type, so a misspelled key or a
/// "forty" for a number would pass unnoticed. Returns "" if all is well,
/// else a message naming the file, section and key.
std::string check_section(const caf::actor_system_config& cfg,
                          const std::string& ini_path,
                          const std::string& section);

/// A section of the untyped file `file` (read from `ini_path`) in which
/// `cfg` declares no option and whose name is within two letters of one it
/// does ([consumers] for [consumer], [kafak]), as a message naming both; ""
/// if there is none. Other undeclared sections are left to the host, which
/// may read them through CAF. read_settings() calls it.
std::string unknown_sections(const caf::actor_system_config& cfg,
                             const caf::settings& file,
                             const std::string& ini_path);

/// An error of caf::actor_system_config::parse() or parse_config_file() as a
/// message for people: file, line and column of a syntax error (with the key
/// of that line), the file that could not be opened, or the command-line
/// argument CAF refused; "" for no error.
std::string describe_parse_error(const caf::error& err,
                                 const std::string& ini_path);

} // namespace ef::config
