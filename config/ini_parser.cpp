#include "config/ini_parser.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

namespace ef::config {

namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos)
    return {};
  auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool valid_name(const std::string& s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'))
      return false;
  return true;
}

/// Parses a value: a double-quoted string (with \" and \\ escapes) or a bare
/// number/boolean token. Like CAF, bare words are not strings.
bool parse_value(const std::string& raw, std::string& out, std::string& err) {
  if (raw.empty()) {
    err = "missing value";
    return false;
  }
  if (raw.front() == '"') {
    std::string v;
    size_t i = 1;
    for (; i < raw.size() && raw[i] != '"'; ++i) {
      if (raw[i] == '\\' && i + 1 < raw.size())
        ++i;
      v += raw[i];
    }
    if (i >= raw.size()) {
      err = "unterminated string";
      return false;
    }
    auto rest = trim(raw.substr(i + 1));
    if (!rest.empty() && rest[0] != ';' && rest[0] != '#') {
      err = "unexpected text after string";
      return false;
    }
    out = v;
    return true;
  }
  auto token = trim(raw.substr(0, raw.find_first_of(";#")));
  if (token == "true" || token == "false") {
    out = token;
    return true;
  }
  bool numeric = !token.empty();
  for (size_t i = 0; i < token.size(); ++i)
    if (!(std::isdigit(static_cast<unsigned char>(token[i])) ||
          (i == 0 && (token[i] == '-' || token[i] == '+'))))
      numeric = false;
  if (!numeric) {
    err = "strings must be double-quoted, got " + token;
    return false;
  }
  out = token;
  return true;
}

} // namespace

ini_result parse_ini(const std::string& text, const std::string& origin) {
  ini_result r;
  std::istringstream in(text);
  std::string line;
  std::string section;
  int number = 0;
  auto fail = [&](const std::string& why) {
    r.error = origin + ":" + std::to_string(number) + ": " + why;
    r.values.clear();
    return r;
  };
  while (std::getline(in, line)) {
    ++number;
    auto t = trim(line);
    if (t.empty() || t[0] == ';' || t[0] == '#')
      continue;
    if (t[0] == '[') {
      auto close = t.find(']');
      if (close == std::string::npos || !trim(t.substr(close + 1)).empty())
        return fail("malformed section header " + t);
      section = trim(t.substr(1, close - 1));
      if (!valid_name(section))
        return fail("invalid section name \"" + section + "\"");
      continue;
    }
    auto eq = t.find('=');
    if (eq == std::string::npos)
      return fail("expected key=value, got " + t);
    auto key = trim(t.substr(0, eq));
    if (!valid_name(key))
      return fail("invalid key \"" + key + "\"");
    if (section.empty())
      return fail("key \"" + key + "\" outside of any [section]");
    std::string value, err;
    if (!parse_value(trim(t.substr(eq + 1)), value, err))
      return fail(section + "." + key + ": " + err);
    r.values.emplace_back(section + "." + key, value);
  }
  return r;
}

ini_result read_ini_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) {
    ini_result r;
    r.error = "cannot read config file " + path;
    return r;
  }
  std::stringstream buf;
  buf << f.rdbuf();
  return parse_ini(buf.str(), path);
}

} // namespace ef::config
