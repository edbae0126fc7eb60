// The tree's replies and errors as HTTP responses: which status, and
// whether the body says nothing was written or that the outcome is unknown
// and how the client settles it (docs/api-contract.md).

#include "app/http/frontend_impl.hpp"
#include <eventforge/messages/api_error.hpp>

#include <nlohmann/json.hpp>

namespace ef::app::http {

namespace {

/// The client's way to learn what happened, for an unknown outcome.
std::string settle_hint(writes w) {
  switch (w) {
  case writes::nothing:
    break;
  case writes::create:
    return "retry with the same Idempotency-Key: it returns the order if it "
           "was created, and creates it once if not (without a key, a retry "
           "may create a second order)";
  case writes::cancel:
    return "GET /orders/{id} shows whether the cancel was recorded (an "
           "OrderCancelled event); a second cancel answers 409 if it was";
  case writes::dlq_verb:
    return "GET /admin/dlq/{id} shows the entry's status";
  case writes::dlq_group:
    return "GET /admin/dlq?status=replaying shows the group's entries whose "
           "replay started";
  }
  return "retry";
}

/// 503 whose body says, as a fact, that nothing was written.
response not_written(const std::string& message, const std::string& field) {
  nlohmann::json body{{"error", message}, {"written", false}};
  if (!field.empty())
    body["field"] = field;
  auto r = response::json(503, body.dump());
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

/// 503 whose body says the outcome is unknown, and how to settle it.
response outcome_unknown(const std::string& message, writes w) {
  nlohmann::json body{{"error", message + "; " + settle_hint(w)},
                      {"outcome", "unknown"}};
  auto r = response::json(503, body.dump());
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

} // namespace

/// Maps an error reply of the tree to an HTTP response. Every 5xx says
/// whether something was written: "written": false when the tree knows
/// nothing was, "outcome": "unknown" otherwise. An internal error is 500
/// with a stable code and no internal detail (the cause is in the log).
response error_response(const caf::error& err, writes w,
                        std::chrono::milliseconds waited) {
  if (err.category() != api_error_category()) {
    // No answer in time, or the actor holding the command stopped: the
    // front cannot know whether it was written (unless it writes nothing).
    auto why = err == caf::sec::request_timeout
                 ? "no answer within " + std::to_string(waited.count()) + " ms"
                 : std::string("the actor holding the request stopped");
    if (w == writes::nothing)
      return not_written("service unavailable (" + why + "); retry", "");
    return outcome_unknown(why + "; the outcome is unknown", w);
  }
  std::string field, message;
  auto& ctx = err.context();
  if (ctx.match_elements<std::string, std::string>()) {
    field = ctx.get_as<std::string>(0);
    message = ctx.get_as<std::string>(1);
  }
  switch (static_cast<api_errc>(err.code())) {
  case api_errc::invalid:
    return response::error(400, message, field);
  case api_errc::not_found:
    return response::error(404, message, field);
  case api_errc::conflict:
    return response::error(409, message, field);
  case api_errc::unavailable:
    return not_written(message, field);
  case api_errc::outcome_unknown:
    return outcome_unknown(message, w);
  case api_errc::internal:
  case api_errc::none: // not sent: an error with code 0 is none
    break;
  }
  nlohmann::json body{{"error", "internal error; nothing was written"},
                      {"code", "internal"},
                      {"written", false}};
  return response::json(500, body.dump());
}

std::int64_t unix_ms_in(std::chrono::milliseconds from_now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           (std::chrono::system_clock::now() + from_now).time_since_epoch())
    .count();
}

} // namespace ef::app::http
