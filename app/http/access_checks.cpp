// Who may ask what: the admin token, the Host of a request that changes
// state through the page (DNS rebinding), its Origin (another site's
// page), and whether scenarios may run at all.

#include "app/http/frontend_impl.hpp"
#include "messages/text.hpp"
#include <eventforge/config/options.hpp>

namespace ef::app {

bool http_frontend::impl::own_host(const std::string& host) const {
  auto colon = host.rfind(':');
  if (colon == std::string::npos ||
      (host.find(']') != std::string::npos && colon < host.find(']')))
    return false; // no port: never what a browser sends for ours
  auto name = host.substr(0, colon);
  if (host.substr(colon + 1) != std::to_string(port))
    return false;
  auto& bound = cfg.http.host;
  if (bound == "0.0.0.0" || bound == "::" || bound == "[::]")
    return true;
  auto unbracket = [](std::string s) {
    return s.size() > 2 && s.front() == '[' && s.back() == ']'
             ? s.substr(1, s.size() - 2)
             : s;
  };
  if (unbracket(name) == unbracket(bound))
    return true;
  return config::is_loopback(bound) && config::is_loopback(unbracket(name));
}

std::string http_frontend::impl::cross_site_refusal(const request& req) const {
  if (auto* site = req.header("Sec-Fetch-Site");
      site && *site != "same-origin" && *site != "none")
    return "a request from another site (Sec-Fetch-Site: " + printable(*site) +
           ")";
  auto* host = req.header("Host");
  if (!host)
    return "a request without a Host header";
  if (!own_host(*host))
    return "Host " + printable(*host) + " is not this server (" +
           cfg.http.host + ":" + std::to_string(port) + ")";
  if (auto* origin = req.header("Origin");
      origin && *origin != "http://" + *host)
    return "a request from another site (Origin " + printable(*origin) +
           ", this server is http://" + printable(*host) + ")";
  return {};
}

std::string http_frontend::impl::scenario_refusal(const request& req) {
  if (!runner)
    return "this process hosts no crash points";
  if (cfg.demo.enabled)
    return "";
  if (!cfg.http.admin_token.empty() && req.header("Authorization") &&
      std::holds_alternative<std::string>(authorize(req)))
    return "";
  return "start with demo.enabled=true (scripts/serve.sh does, on "
         "loopback) or send the admin token";
}

std::variant<std::string, http::response>
http_frontend::impl::authorize(const request& req) {
  auto& configured = cfg.http.admin_token;
  if (configured.empty())
    return response::error(404, "admin endpoints are off (set "
                                "http.admin-token)");
  auto colon = configured.find(':');
  auto name = colon == std::string::npos ? std::string("admin")
                                         : configured.substr(0, colon);
  auto secret =
    colon == std::string::npos ? configured : configured.substr(colon + 1);
  auto* auth = req.header("Authorization");
  if (!auth || auth->rfind("Bearer ", 0) != 0) {
    auto r =
      response::error(401, "a bearer token is required", "Authorization");
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
  }
  auto given = auth->substr(7);
  // Compare in constant time: the length is not secret, the bytes are.
  unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < given.size() && i < secret.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ secret[i]);
  if (diff != 0)
    return response::error(403, "the bearer token is not valid",
                           "Authorization");
  return "token:" + name;
}

} // namespace ef::app
