#pragma once

#include <eventforge/messages/events.hpp>

#include <optional>
#include <string>

namespace ef::kafka {

/// The record value: {event_id, event_type, order_id, occurred_at, payload}.
std::string encode_value(const order_event& ev);

/// Decodes and validates a record value. On failure returns nullopt and sets
/// `error` to what is wrong (the record is then a poison record).
std::optional<order_event> decode_value(const std::string& value,
                                        const std::string& key,
                                        std::string& error);

} // namespace ef::kafka
