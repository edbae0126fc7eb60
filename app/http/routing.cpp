// What a handler sees and returns, and the router that finds a request's
// route: request headers and query parameters, response constructors, and
// pattern matching with {name} parameters (404, or 405 with Allow).

#include "app/http/server.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace ef::app::http {

namespace {

bool iequals(const std::string& a, const std::string& b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  size_t from = 1; // paths start with '/'
  while (from <= path.size()) {
    auto slash = path.find('/', from);
    out.push_back(path.substr(from, slash - from));
    if (slash == std::string::npos)
      break;
    from = slash + 1;
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Percent-decodes a query component ('+' is a space); nullopt if malformed.
std::optional<std::string> decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size())
        return std::nullopt;
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0)
        return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

} // namespace

const std::string* request::header(const std::string& name) const {
  for (auto& [k, v] : headers)
    if (iequals(k, name))
      return &v;
  return nullptr;
}

std::optional<std::string> request::query_param(const std::string& name) const {
  size_t from = 0;
  while (from <= query.size() && !query.empty()) {
    auto amp = query.find('&', from);
    auto part = query.substr(from, amp - from);
    auto eq = part.find('=');
    if (decode(part.substr(0, eq)) == name) {
      if (eq == std::string::npos)
        return std::string{};
      // A malformed escape comes back raw, so that validation refuses it.
      auto raw = part.substr(eq + 1);
      return decode(raw).value_or(raw);
    }
    if (amp == std::string::npos)
      break;
    from = amp + 1;
  }
  return std::nullopt;
}

response response::json(int status, std::string body) {
  response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

response response::error(int status, const std::string& message,
                         const std::string& field) {
  nlohmann::json body{{"error", message}};
  if (!field.empty())
    body["field"] = field;
  // A message may quote what a client sent: never let bytes that are not
  // UTF-8 turn an answer into an exception.
  return json(status, body.dump(-1, ' ', false,
                                nlohmann::json::error_handler_t::replace));
}

void router::add(route r) {
  auto segments = split_path(r.pattern);
  routes_.push_back({std::move(r), std::move(segments)});
}

router::match router::find(const std::string& method,
                           const std::string& path) const {
  match m;
  m.label = "other";
  auto segments = split_path(path);
  for (auto& c : routes_) {
    if (c.segments.size() != segments.size())
      continue;
    std::map<std::string, std::string> params;
    bool fits = true;
    for (size_t i = 0; i < segments.size() && fits; ++i) {
      auto& want = c.segments[i];
      if (want.size() > 2 && want.front() == '{' && want.back() == '}')
        fits =
          !segments[i].empty() &&
          params.emplace(want.substr(1, want.size() - 2), segments[i]).second;
      else
        fits = want == segments[i];
    }
    if (!fits)
      continue;
    m.label = c.r.pattern;
    if (c.r.method == method) {
      m.found = &c.r;
      m.params = std::move(params);
      return m;
    }
    m.allowed.push_back(c.r.method);
  }
  return m;
}

std::vector<std::string> router::labels() const {
  std::vector<std::string> out;
  for (auto& c : routes_)
    if (std::find(out.begin(), out.end(), c.r.pattern) == out.end())
      out.push_back(c.r.pattern);
  return out;
}

} // namespace ef::app::http
