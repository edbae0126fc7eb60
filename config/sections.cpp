#include <eventforge/config/caf_options.hpp>

#include "config/nearest.hpp"

#include <caf/config_value.hpp>
#include <caf/settings.hpp>

#include <algorithm>
#include <fstream>
#include <set>

// What a configuration file holds outside the keys EventForge reads itself:
// sections nobody declared (a misspelled [consumers]) and the keys of a
// host's own section, checked as strictly as EventForge's.

namespace ef::config {

namespace {

/// CAF 0.17 keeps a configuration's option set protected (custom_options_)
/// and offers no getter. A pointer to that member, formed through a derived
/// class, reads it from any configuration a host built.
struct option_set_reader : caf::actor_system_config {
  static const caf::config_option_set& of(const caf::actor_system_config& cfg) {
    return cfg.*(&option_set_reader::custom_options_);
  }
};

/// Every section some option is declared in: CAF's own ([scheduler],
/// [logger], ...), EventForge's and the host's.
std::set<std::string> declared_sections(const caf::actor_system_config& cfg) {
  std::set<std::string> out;
  for (auto& opt : option_set_reader::of(cfg))
    out.emplace(opt.category().begin(), opt.category().end());
  return out;
}

std::string joined(const std::vector<std::string>& xs) {
  std::string out;
  for (auto& x : xs)
    out += (out.empty() ? "" : ", ") + x;
  return out;
}

/// The file as CAF reads it without types, or an error message.
caf::expected<caf::settings> untyped(const std::string& ini_path) {
  return caf::actor_system_config::parse_config_file(ini_path.c_str());
}

} // namespace

std::string config_file_of(const caf::actor_system_config& cfg) {
  // CAF falls back to this name and reads it only if it exists; a file an
  // operator names with --config-file must exist (read_settings says so).
  static const std::string fallback =
    caf::actor_system_config{}.config_file_path;
  if (cfg.config_file_path == fallback && !std::ifstream(fallback))
    return {};
  return cfg.config_file_path;
}

std::string unknown_sections(const caf::actor_system_config& cfg,
                             const caf::settings& file,
                             const std::string& ini_path) {
  auto known = declared_sections(cfg);
  std::vector<std::string> names(known.begin(), known.end());
  for (auto& [name, value] : file) {
    if (!caf::holds_alternative<caf::settings>(value) || known.count(name))
      continue;
    // Nobody reads a section no option is declared in: its keys would
    // silently keep their defaults, however far its name is from a real
    // one ([loging]). A host declares the sections it reads.
    auto close = nearest(name, names);
    return ini_path + ": unknown section [" + name +
           "]: no option is declared in it" +
           (close.empty() ? std::string(" (a host declares the sections it "
                                        "reads)")
                          : " (did you mean [" + close + "]?)");
  }
  return {};
}

std::string check_section(const caf::actor_system_config& cfg,
                          const std::string& ini_path,
                          const std::string& section) {
  auto& opts = option_set_reader::of(cfg);
  std::vector<std::string> declared;
  for (auto& opt : opts)
    if (opt.category() == section)
      declared.emplace_back(opt.long_name().begin(), opt.long_name().end());
  auto check = [&](const caf::settings& dict,
                   const std::string& origin) -> std::string {
    auto i = dict.find(section);
    if (i == dict.end())
      return {};
    auto* keys = caf::get_if<caf::settings>(&i->second);
    if (keys == nullptr)
      return origin + section + ": a value where the section [" + section +
             "] belongs";
    for (auto& [name, value] : *keys) {
      auto where = origin + "[" + section + "] " + name;
      auto* opt = opts.qualified_name_lookup(section, name);
      if (opt == nullptr) {
        auto close = nearest(name, declared);
        return where + ": unknown key" +
               (close.empty() ? "" : " (did you mean " + close + "?)") +
               " (declared: " + joined(declared) + ")";
      }
      if (auto err = opt->check(value))
        return where + " = " + caf::to_string(value) +
               ": not a value of type " +
               std::string(opt->type_name().begin(), opt->type_name().end());
    }
    return {};
  };
  if (!ini_path.empty()) {
    auto file = untyped(ini_path);
    if (!file)
      return describe_parse_error(file.error(), ini_path);
    if (auto err = check(*file, ini_path + ": "); !err.empty())
      return err;
  }
  return check(cfg.content, "");
}

} // namespace ef::config
