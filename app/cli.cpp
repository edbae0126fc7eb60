#include "app/cli.hpp"

#include "kafka/connection.hpp"

#include <fstream>
#include <sstream>

namespace ef::app {

namespace {

std::string str(caf::string_view v) {
  return std::string(v.begin(), v.end());
}

/// Binds CAF's own options, except those of the option table (bound with
/// their defaults above) and CAF's global ones (--help, --config-file and
/// the like, which the subcommand has itself).
void bind_caf_options(
  CLI::App& sub, std::shared_ptr<std::vector<config_options::argument>> given) {
  config::actor_system_config probe;
  for (auto& opt : probe.option_set()) {
    auto category = str(opt.category());
    auto key = category + "." + str(opt.long_name());
    if (category == "global" || config::find_option(key) != nullptr)
      continue;
    auto help = str(opt.description()) + " (CAF, " + str(opt.type_name()) + ")";
    if (opt.is_flag())
      sub
        .add_flag_function(
          "--" + key,
          [given, key](std::int64_t) {
            given->push_back({key, "", false, true});
          },
          help)
        ->group("CAF");
    else
      sub
        .add_option_function<std::string>(
          "--" + key,
          [given, key](const std::string& v) {
            given->push_back({key, v, false, false});
          },
          help)
        ->group("CAF");
  }
}

} // namespace

config_options::config_options(CLI::App& sub)
    : given_(std::make_shared<std::vector<argument>>()) {
  sub.add_option("--config-file", config_file_,
                 "CAF INI file with [section] key=value settings, "
                 "EventForge's and CAF's");
  for (auto& opt : config::options()) {
    config::settings defaults;
    auto given = given_;
    auto key = opt.key;
    sub
      .add_option_function<std::string>(
        "--" + opt.key,
        [given, key](const std::string& v) {
          given->push_back({key, v, true, false});
        },
        opt.description + " (default: \"" + opt.render(defaults) + "\")")
      ->group("Configuration");
  }
  bind_caf_options(sub, given_);
}

bool config_options::resolve(configuration& out, std::string& error) const {
  caf::actor_system_config::string_list args;
  std::vector<argument> after_parse;
  for (auto& a : *given_) {
    if (!a.eventforge) {
      args.push_back("--" + a.key + (a.flag ? "" : "=" + a.value));
      continue;
    }
    // Each EventForge value on its own first, so that the message names the
    // key as the option table words it (CAF would only name the argument).
    if (auto err = config::check_value(a.key, a.value)) {
      error = *err;
      return false;
    }
    // CAF's command line has no syntax for an empty value, nor for a flag's
    // value (--demo.enabled=false); these go into the configuration after
    // parsing, as the command line's values would.
    if (a.value.empty() ||
        config::find_option(a.key)->type == config::value_type::boolean)
      after_parse.push_back(a);
    else
      args.push_back("--" + a.key + "=" + a.value);
  }
  // Without a file, an empty one: CAF would otherwise read a stray
  // caf-application.ini from the working directory.
  std::istringstream no_file;
  std::ifstream file;
  if (!config_file_.empty()) {
    file.open(config_file_);
    if (!file) {
      error = "cannot read config file " + config_file_;
      return false;
    }
  }
  std::istream& ini =
    config_file_.empty() ? static_cast<std::istream&>(no_file) : file;
  if (auto err = out.caf.parse(std::move(args), ini)) {
    error = config::describe_parse_error(err, config_file_);
    return false;
  }
  for (auto& a : after_parse) {
    if (config::find_option(a.key)->type == config::value_type::boolean)
      out.caf.set(a.key, a.value == "true");
    else
      out.caf.set(a.key, a.value);
  }
  auto built = config::read_settings(out.caf, config_file_);
  if (!built.ok()) {
    error = built.error;
    return false;
  }
  // Every command that talks to Kafka gets the same properties as `serve`:
  // checked here, before any of them connects (a CA file that cannot be
  // read, a key that is not a librdkafka property), as a config error.
  if (auto err = kafka::check_properties(built.value.kafka.properties)) {
    error = *err;
    return false;
  }
  out.settings = built.value;
  return true;
}

} // namespace ef::app
