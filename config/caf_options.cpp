#include <eventforge/config/caf_options.hpp>

#include <caf/config_option_adder.hpp>
#include <caf/config_value.hpp>
#include <caf/make_config_option.hpp>
#include <caf/pec.hpp>
#include <caf/sec.hpp>
#include <caf/settings.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>

namespace ef::config {

namespace {

std::string section_of(const std::string& key) {
  return key.substr(0, key.find('.'));
}

std::string name_of(const std::string& key) {
  return key.substr(key.find('.') + 1);
}

/// The sections the option table owns, in table order.
std::vector<std::string> eventforge_sections() {
  std::vector<std::string> out;
  for (auto& o : options()) {
    auto s = section_of(o.key);
    if (std::find(out.begin(), out.end(), s) == out.end())
      out.push_back(s);
  }
  return out;
}

/// A CAF value as the option table reads it: strings as they are, numbers
/// and booleans printed, lists joined with ','. Anything else (atoms,
/// durations, nested sections) in CAF's notation, which no validator accepts
/// where it does not belong.
std::string to_text(const caf::config_value& v) {
  if (auto s = caf::get_if<std::string>(&v))
    return *s;
  if (auto i = caf::get_if<caf::config_value::integer>(&v))
    return std::to_string(*i);
  if (auto b = caf::get_if<bool>(&v))
    return *b ? "true" : "false";
  if (auto d = caf::get_if<double>(&v)) {
    char buf[64];
    auto end = std::to_chars(buf, buf + sizeof(buf), *d).ptr;
    return std::string(buf, end);
  }
  if (auto xs = caf::get_if<caf::config_value::list>(&v)) {
    std::string out;
    for (auto& x : *xs)
      out += (out.empty() ? "" : ",") + to_text(x);
    return out;
  }
  return caf::to_string(v);
}

/// One value of an EventForge section and whether it came from the file.
struct entry {
  std::string key;
  std::string text;
  bool from_file;
};

/// Adds (or replaces) the values of EventForge's sections in `dict`.
void collect(const caf::settings& dict, bool from_file,
             std::vector<entry>& out) {
  auto put = [&](std::string key, std::string text) {
    auto i = std::find_if(out.begin(), out.end(),
                          [&](const entry& e) { return e.key == key; });
    if (i == out.end())
      out.push_back({std::move(key), std::move(text), from_file});
    else if (i->text != text)
      *i = {std::move(key), std::move(text), from_file};
  };
  for (auto& section : eventforge_sections()) {
    auto i = dict.find(section);
    if (i == dict.end())
      continue;
    // A value instead of a section ("api=1" outside any [section]) is an
    // unknown key like any other.
    auto* keys = caf::get_if<caf::settings>(&i->second);
    if (keys == nullptr) {
      put(section, to_text(i->second));
      continue;
    }
    for (auto& [name, value] : *keys)
      put(section + "." + name, to_text(value));
  }
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos)
    return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

/// "section.key" and the text of line `line` of the file, as far as they
/// can be told from a line CAF refused (empty if not).
std::pair<std::string, std::string> line_at(const std::string& path,
                                            std::int64_t line) {
  std::ifstream in(path);
  std::string text, section;
  for (std::int64_t n = 1; std::getline(in, text); ++n) {
    auto t = trim(text);
    if (n == line) {
      auto eq = t.find('=');
      if (eq == std::string::npos || t.empty() || t[0] == '[')
        return {"", t};
      auto key = trim(t.substr(0, eq));
      return {section.empty() ? key : section + "." + key, t};
    }
    if (!t.empty() && t[0] == '[')
      section = trim(t.substr(1, t.find(']') - 1));
  }
  return {};
}

std::string words(std::string code) {
  std::replace(code.begin(), code.end(), '_', ' ');
  return code;
}

/// How CAF reads, checks and stores a text option: what
/// caf::make_config_option<std::string> gives, but defined here. Debian's
/// libcaf_core (GCC) holds that template's static meta state as a
/// STB_GNU_UNIQUE object, clang emits it as a plain weak one, and a
/// clang-built program (our TSan build) then parsed every value of a text
/// option through a null function pointer. An object of our own has one
/// definition whatever the compiler; parsing is CAF's (quoted or bare).
const caf::config_option::meta_state& text_meta_state() {
  static const caf::config_option::meta_state meta{
    [](const caf::config_value& x) -> caf::error {
      if (caf::holds_alternative<std::string>(x))
        return caf::none;
      return caf::make_error(caf::pec::type_mismatch);
    },
    [](void* ptr, const caf::config_value& x) {
      *static_cast<std::string*>(ptr) = caf::get<std::string>(x);
    },
    [](const void* ptr) {
      return caf::config_value{*static_cast<const std::string*>(ptr)};
    },
    [](void* ptr, caf::string_view text) {
      return caf::detail::parse_impl(static_cast<std::string*>(ptr), text);
    },
    "std::string"};
  return meta;
}

} // namespace

void declare_options(caf::config_option_set& opts) {
  for (auto& o : options()) {
    // The adder keeps a view of the category: it must outlive the adder.
    auto section = section_of(o.key);
    caf::config_option_adder group{opts, section};
    auto name = name_of(o.key);
    switch (o.type) {
    case value_type::integer:
      group.add<std::int64_t>(name, o.description);
      break;
    case value_type::real:
      group.add<double>(name, o.description);
      break;
    case value_type::boolean:
      group.add<bool>(name, o.description);
      break;
    case value_type::text:
      opts.add(
        caf::config_option{section, name, o.description, &text_meta_state()});
      break;
    }
  }
}

actor_system_config::actor_system_config() {
  declare_options(custom_options_);
}

build_result read_settings(const caf::actor_system_config& cfg,
                           const std::string& ini_path) {
  build_result r;
  std::vector<entry> values;
  if (!ini_path.empty()) {
    // Without an option set CAF keeps every value with the type it was
    // written in, including those it dropped from cfg.content.
    auto file = caf::actor_system_config::parse_config_file(ini_path.c_str());
    if (!file) {
      r.error = describe_parse_error(file.error(), ini_path);
      return r;
    }
    if (auto err = unknown_sections(cfg, *file, ini_path); !err.empty()) {
      r.error = err;
      return r;
    }
    collect(*file, true, values);
  }
  collect(cfg.content, false, values);
  raw_values raw;
  for (auto& e : values) {
    if (auto err = check_value(e.key, e.text)) {
      r.error = (e.from_file ? ini_path + ": " : std::string{}) + *err;
      return r;
    }
    raw.emplace_back(e.key, e.text);
  }
  return build_settings(raw);
}

std::string describe_parse_error(const caf::error& err,
                                 const std::string& ini_path) {
  if (!err)
    return "";
  if (err.category() == caf::atom("system") &&
      err.code() == static_cast<std::uint8_t>(caf::sec::cannot_open_file))
    return "cannot read config file " + ini_path;
  if (err.category() != caf::atom("parser") ||
      !err.context().match_elements<caf::settings>())
    return caf::actor_system_config::render(err);
  auto what = words(to_string(static_cast<caf::pec>(err.code())));
  auto& where = err.context().get_as<caf::settings>(0);
  if (auto arg = caf::get_if<std::string>(&where, "argument"))
    return "invalid command-line argument " + *arg + ": " + what;
  auto line = caf::get_or(where, "line", std::int64_t{0});
  auto column = caf::get_or(where, "column", std::int64_t{0});
  auto [key, text] = line_at(ini_path, line);
  std::string out =
    ini_path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  if (!key.empty())
    out += key + ": ";
  out += what + " (CAF's INI syntax: strings double-quoted, booleans true "
                "or false, comments after ';')";
  if (!text.empty())
    out += ": " + text;
  return out;
}

} // namespace ef::config
