#include "app/cli.hpp"

#include "config/ini_parser.hpp"

namespace ef::app {

config_options::config_options(CLI::App& sub)
    : cli_values_(std::make_shared<config::raw_values>()) {
  sub.add_option("--config-file", config_file_,
                 "INI file with [section] key=value settings");
  for (auto& opt : config::options()) {
    config::settings defaults;
    auto values = cli_values_;
    auto key = opt.key;
    sub
      .add_option_function<std::string>(
        "--" + opt.key,
        [values, key](const std::string& v) { values->emplace_back(key, v); },
        opt.description + " (default: \"" + opt.render(defaults) + "\")")
      ->group("Configuration");
  }
}

bool config_options::resolve(config::settings& out, std::string& error) const {
  config::raw_values all;
  if (!config_file_.empty()) {
    auto ini = config::read_ini_file(config_file_);
    if (!ini.ok()) {
      error = ini.error;
      return false;
    }
    all = ini.values;
  }
  all.insert(all.end(), cli_values_->begin(), cli_values_->end());
  auto built = config::build_settings(all);
  if (!built.ok()) {
    error = built.error;
    return false;
  }
  out = built.value;
  return true;
}

} // namespace ef::app
