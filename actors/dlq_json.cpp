// DLQ entries and groups as JSON: what the DLQ desk answers, and what
// `eventforge dlq show` and `dlq list --json` print.

#include "actors/dlq_operations.hpp"

#include "messages/text.hpp"

#include <nlohmann/json.hpp>

namespace ef {

namespace {

std::string hex_of(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xf];
  }
  return out;
}

/// Replace, never throw, should anything still not be UTF-8.
std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace

std::string to_json(const persistence::dlq_entry& e) {
  // A foreign producer's value need not be JSON, nor even text: it is shown
  // as JSON if it is JSON, as a string if it is text, else in hex; the key
  // likewise. Every other field is printable text already (the store).
  auto value = nlohmann::json::parse(e.value, nullptr, false);
  nlohmann::json out{{"id", e.id},
                     {"consumer", e.consumer},
                     {"event_id", e.event_id},
                     {"order_key", e.order_key},
                     {"event_type", e.event_type},
                     {"error_class", e.error_class},
                     {"error_message", e.error_message},
                     {"fingerprint", e.fingerprint},
                     {"attempts", e.attempts},
                     {"source",
                      {{"topic", e.source_topic},
                       {"partition", e.source_partition},
                       {"offset", e.source_offset}}},
                     {"first_failure_at", e.first_failure_at},
                     {"last_failure_at", e.last_failure_at},
                     {"parked_at", e.parked_at},
                     {"status", e.status},
                     {"age_seconds", e.age_seconds}};
  if (!e.traceparent.empty())
    out["traceparent"] = e.traceparent;
  if (!e.replay_error.empty())
    out["replay_error"] = e.replay_error;
  if (!is_text(e.key))
    out["key_hex"] = hex_of(e.key);
  if (!value.is_discarded())
    out["value"] = std::move(value);
  else if (is_text(e.value))
    out["value"] = e.value;
  else
    out["value_hex"] = hex_of(e.value);
  return dump(out);
}

std::string to_json(const persistence::dlq_group& g) {
  return dump({{"id", g.id},
               {"fingerprint", g.fingerprint},
               {"error_class", g.error_class},
               {"example", g.example_message},
               {"count", g.count},
               {"oldest_age_seconds", g.oldest_age_seconds}});
}

std::string to_json(const std::vector<dlq_operations::group_step>& steps) {
  auto all = nlohmann::json::array();
  for (auto& s : steps)
    all.push_back(
      {{"id", s.entry.id},
       {"consumer", s.entry.consumer},
       {"order_key", s.entry.order_key},
       {"result", s.what.message},
       {"status", s.what.status},
       {"done", s.what.what == dlq_operations::result::done},
       {"refused", s.what.what == dlq_operations::result::refused}});
  return dump(all);
}

} // namespace ef
