#pragma once

#include <eventforge/messages/order_messages.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ef {

/// Bounds of an order command. Checked before anything reaches PostgreSQL,
/// by the API actor (for every host) and by the HTTP front (to name the
/// field in its 400).
struct order_limits {
  static constexpr size_t max_items = 1000;
  static constexpr size_t max_text = 200; ///< characters of an ID or SKU
  static constexpr std::int64_t max_qty = 1000000;
  static constexpr std::int64_t max_price_cents = 100000000000; // 1e9 units
  static constexpr size_t max_key = 200; ///< Idempotency-Key bytes
};

/// A refused field: its JSON path (or header name) and why.
struct invalid_field {
  std::string field;
  std::string message;
};

/// True if PostgreSQL `text` can store `s` and it is fit for an ID: valid
/// UTF-8, no control characters (NUL included, which text cannot hold).
bool is_clean_text(std::string_view s);

/// Number of characters (code points) of valid UTF-8.
size_t utf8_length(std::string_view s);

/// Checks every value of the command; nullopt if it may be written.
std::optional<invalid_field> validate(const create_order& cmd);

/// What identifies a create request beside its Idempotency-Key: a reused key
/// with another fingerprint is refused (api_errc::conflict). FNV-1a 64 (hex)
/// of the canonical JSON of customer and items (keys sorted, no spaces), so
/// it is what the HTTP front stored for the same body before every caller
/// used this. The API actor fills it in for a keyed command that has none:
/// typed callers get the same check as HTTP.
std::string request_fingerprint(const create_order& cmd);

/// Checks an Idempotency-Key: 1 to 200 visible ASCII characters.
std::optional<invalid_field> validate_idempotency_key(std::string_view key);

/// Checks a W3C traceparent ("00-<32 hex>-<16 hex>-<2 hex>"), or none: a
/// typed host's command carries what the HTTP front would have checked.
std::optional<invalid_field> validate_traceparent(std::string_view tp);

} // namespace ef
