#pragma once

#include <eventforge/messages/order_messages.hpp>

#include <optional>
#include <string>
#include <variant>

namespace ef::app::http {

/// Why a request is refused before it becomes a command: HTTP status (4xx),
/// message, and the field (JSON path or header) it is about.
struct refusal {
  int status = 400;
  std::string message;
  std::string field;
};

/// The parts of POST /orders that become a create_order.
struct order_request {
  std::string content_type;                   ///< raw header value
  std::string body;                           ///< raw bytes
  std::optional<std::string> idempotency_key; ///< header, if sent
};

/// Parses and validates POST /orders completely: media type and charset,
/// JSON syntax (UTF-8 only), nesting depth, duplicate and unknown keys,
/// types, and every value (actors/order_validation). A command it returns
/// can be written; a refusal names the field. Total: any bytes give one or
/// the other, never an exception (the fuzz target checks that).
std::variant<create_order, refusal> parse_order(const order_request& req);

} // namespace ef::app::http
