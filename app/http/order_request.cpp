#include "app/http/order_request.hpp"

#include "actors/order_validation.hpp"
#include "messages/ids.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <set>
#include <vector>

namespace ef::app::http {

namespace {

using json = nlohmann::json;

/// Deeper than {"items":[{...}]} needs; bounds the parser's recursion.
constexpr int max_depth = 8;

std::string lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// application/json, optionally with charset=utf-8 (JSON is UTF-8, RFC
/// 8259); any other type or charset is 415.
std::optional<refusal> check_media_type(const std::string& value) {
  auto semi = value.find(';');
  if (lower(trim(value.substr(0, semi))) != "application/json")
    return refusal{415, "Content-Type must be application/json",
                   "Content-Type"};
  while (semi != std::string::npos) {
    auto next = value.find(';', semi + 1);
    auto param = lower(trim(value.substr(semi + 1, next - semi - 1)));
    semi = next;
    if (param.empty())
      continue;
    auto eq = param.find('=');
    auto name = trim(param.substr(0, eq));
    auto arg = eq == std::string::npos ? "" : trim(param.substr(eq + 1));
    if (arg.size() >= 2 && arg.front() == '"' && arg.back() == '"')
      arg = arg.substr(1, arg.size() - 2);
    if (name != "charset" || arg != "utf-8")
      return refusal{415, "Content-Type may only carry charset=utf-8",
                     "Content-Type"};
  }
  return std::nullopt;
}

/// Thrown from the parser callback to stop at the first structural problem.
struct structure_error {
  refusal why;
};

/// Parses with a depth limit and refuses duplicate keys in any object
/// (nlohmann would silently keep the last one).
json parse_strict(const std::string& body) {
  std::vector<std::set<std::string>> keys;
  auto check = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > max_depth)
      throw structure_error{{400, "nested too deeply", "body"}};
    switch (event) {
    case json::parse_event_t::object_start:
      keys.emplace_back();
      break;
    case json::parse_event_t::key:
      if (!keys.empty() &&
          !keys.back().insert(parsed.get<std::string>()).second)
        throw structure_error{
          {400, "duplicate key", parsed.get<std::string>()}};
      break;
    case json::parse_event_t::object_end:
      if (!keys.empty())
        keys.pop_back();
      break;
    default:
      break;
    }
    return true;
  };
  return json::parse(body, check, false);
}

void only_keys(const json& obj, std::initializer_list<const char*> allowed,
               const std::string& prefix) {
  for (auto& [key, value] : obj.items()) {
    bool known = false;
    for (auto* a : allowed)
      known = known || key == a;
    if (!known)
      throw structure_error{{400, "unknown field", prefix + key}};
  }
}

std::int64_t integer(const json& obj, const char* key,
                     const std::string& field) {
  auto i = obj.find(key);
  if (i == obj.end())
    throw structure_error{{400, "is required", field}};
  if (!i->is_number_integer())
    throw structure_error{{400, "must be an integer", field}};
  if (i->is_number_unsigned() &&
      i->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    throw structure_error{{400, "is out of range", field}};
  return i->get<std::int64_t>();
}

std::string text(const json& obj, const char* key, const std::string& field) {
  auto i = obj.find(key);
  if (i == obj.end())
    throw structure_error{{400, "is required", field}};
  if (!i->is_string())
    throw structure_error{{400, "must be a string", field}};
  return i->get<std::string>();
}

} // namespace

std::variant<create_order, refusal> parse_order(const order_request& req) {
  if (auto bad = check_media_type(req.content_type))
    return *bad;
  if (req.idempotency_key)
    if (auto bad = validate_idempotency_key(*req.idempotency_key))
      return refusal{400, bad->message, bad->field};
  try {
    auto body = parse_strict(req.body);
    if (body.is_discarded())
      return refusal{400, "body is not valid UTF-8 JSON", "body"};
    if (!body.is_object())
      return refusal{400, "body must be a JSON object", "body"};
    only_keys(body, {"customer_id", "items"}, "");
    create_order cmd;
    cmd.customer_id = text(body, "customer_id", "customer_id");
    auto items = body.find("items");
    if (items == body.end())
      return refusal{400, "is required", "items"};
    if (!items->is_array())
      return refusal{400, "must be an array", "items"};
    if (items->size() > order_limits::max_items)
      return refusal{400, "at most 1000 items per order", "items"};
    for (size_t i = 0; i < items->size(); ++i) {
      auto& item = (*items)[i];
      auto field = "items[" + std::to_string(i) + "]";
      if (!item.is_object())
        return refusal{400, "must be an object", field};
      only_keys(item, {"sku", "qty", "price_cents"}, field + ".");
      cmd.items.push_back(
        {text(item, "sku", field + ".sku"),
         integer(item, "qty", field + ".qty"),
         integer(item, "price_cents", field + ".price_cents")});
    }
    if (req.idempotency_key)
      cmd.idempotency_key = *req.idempotency_key;
    if (auto bad = validate(cmd))
      return refusal{400, bad->message, bad->field};
    cmd.request_fingerprint = request_fingerprint(cmd);
    return cmd;
  } catch (const structure_error& e) {
    return e.why;
  }
}

} // namespace ef::app::http
