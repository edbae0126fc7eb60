#include "actors/order_validation.hpp"

#include "messages/ids.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace ef {

namespace {

/// Length of the UTF-8 sequence starting at s[i] if it is well formed
/// (RFC 3629: shortest form, no surrogates, at most U+10FFFF), else 0.
size_t utf8_sequence(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto c = byte(i);
  if (c < 0x80)
    return 1;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size())
    return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80)
      return 0;
  auto c1 = byte(i + 1);
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) ||
      (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
    return 0;
  return n;
}

std::optional<invalid_field> text_field(const std::string& value,
                                        const std::string& field) {
  if (value.empty() || utf8_length(value) > order_limits::max_text)
    return invalid_field{
      field, "must be a non-empty string of at most 200 characters"};
  if (!is_clean_text(value))
    return invalid_field{field, "must be valid UTF-8 without control "
                                "characters"};
  return std::nullopt;
}

} // namespace

bool is_clean_text(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F)
      return false;
    auto n = utf8_sequence(s, i);
    if (n == 0)
      return false;
    // C1 controls, U+0080..U+009F: encoded as C2 80..C2 9F.
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0)
      return false;
    i += n;
  }
  return true;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::optional<invalid_field> validate(const create_order& cmd) {
  if (auto bad = text_field(cmd.customer_id, "customer_id"))
    return bad;
  if (cmd.items.empty())
    return invalid_field{"items", "an order needs at least one item"};
  if (cmd.items.size() > order_limits::max_items)
    return invalid_field{"items", "at most 1000 items per order"};
  std::int64_t total = 0;
  for (size_t i = 0; i < cmd.items.size(); ++i) {
    auto& item = cmd.items[i];
    auto field = "items[" + std::to_string(i) + "].";
    if (auto bad = text_field(item.sku, field + "sku"))
      return bad;
    if (item.qty <= 0 || item.qty > order_limits::max_qty)
      return invalid_field{field + "qty",
                           "must be an integer from 1 to 1000000"};
    if (item.price_cents < 0 ||
        item.price_cents > order_limits::max_price_cents)
      return invalid_field{field + "price_cents",
                           "must be an integer from 0 to 100000000000"};
    std::int64_t line = 0;
    if (__builtin_mul_overflow(item.qty, item.price_cents, &line) ||
        __builtin_add_overflow(total, line, &total))
      return invalid_field{"items", "the order total exceeds 2^63 - 1 cents"};
  }
  if (!cmd.idempotency_key.empty())
    if (auto bad = validate_idempotency_key(cmd.idempotency_key))
      return bad;
  // What the HTTP front sets itself, a typed host may set to anything: both
  // end in PostgreSQL text and JSON, which hold neither NUL nor bytes that
  // are not UTF-8.
  if (auto bad = validate_traceparent(cmd.traceparent))
    return bad;
  if (cmd.request_fingerprint.size() > order_limits::max_key ||
      !std::all_of(cmd.request_fingerprint.begin(),
                   cmd.request_fingerprint.end(),
                   [](unsigned char c) { return c >= 0x21 && c <= 0x7E; }))
    return invalid_field{"request_fingerprint",
                         "must be at most 200 visible ASCII characters"};
  return std::nullopt;
}

std::optional<invalid_field> validate_traceparent(std::string_view tp) {
  auto hex = [&](size_t from, size_t n) {
    return std::all_of(tp.begin() + from, tp.begin() + from + n,
                       [](unsigned char c) { return std::isxdigit(c) != 0; });
  };
  if (tp.empty() ||
      (tp.size() == 55 && tp[2] == '-' && tp[35] == '-' && tp[52] == '-' &&
       hex(0, 2) && hex(3, 32) && hex(36, 16) && hex(53, 2)))
    return std::nullopt;
  return invalid_field{"traceparent", "must be empty or a W3C traceparent "
                                      "(00-<32 hex>-<16 hex>-<2 hex>)"};
}

std::optional<invalid_field> validate_idempotency_key(std::string_view key) {
  if (key.empty() || key.size() > order_limits::max_key)
    return invalid_field{"Idempotency-Key", "must be 1 to 200 characters"};
  for (unsigned char c : key)
    if (c < 0x21 || c > 0x7E)
      return invalid_field{"Idempotency-Key",
                           "may contain only visible ASCII characters"};
  return std::nullopt;
}

std::string request_fingerprint(const create_order& cmd) {
  // nlohmann's objects keep their keys sorted: this is the canonical form.
  nlohmann::json items = nlohmann::json::array();
  for (auto& i : cmd.items)
    items.push_back(
      {{"sku", i.sku}, {"qty", i.qty}, {"price_cents", i.price_cents}});
  nlohmann::json body{{"customer_id", cmd.customer_id}, {"items", items}};
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(fnv1a64(body.dump())));
  return buf;
}

} // namespace ef
