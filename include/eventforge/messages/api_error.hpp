#pragma once

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

#include <cstdint>
#include <string>

namespace ef {

/// Why an order command failed. Carried as caf::error in category "ef_api";
/// the context holds (field, message).
enum class api_errc : std::uint8_t {
  /// Not a failure: a caf::error whose code is 0 is no error (CAF 0.17).
  none = 0,
  /// The command is malformed or violates a rule; nothing was written.
  invalid,
  /// No order with that ID.
  not_found,
  /// The command conflicts with stored state (reused idempotency key with
  /// another body, order already cancelled).
  conflict,
  /// Nothing was written: the database could not be reached, or the
  /// command's deadline passed before it could be committed (it was refused
  /// or rolled back). Retrying is safe.
  unavailable,
  /// The database rejected the write for a reason retrying cannot fix;
  /// nothing was written.
  internal,
  /// The command may or may not have been committed: the connection broke
  /// during COMMIT, or the actor that held it stopped after its commit.
  /// Retry a create with the same idempotency key (it returns the order if
  /// it exists); read an order to learn whether its cancel was recorded.
  outcome_unknown,
};

} // namespace ef

// caf::error{api_errc::not_found} and caf::make_error(code, field, message)
// carry the category "ef_api".
CAF_ERROR_CODE_ENUM(ef::api_errc, "ef_api")

namespace ef {

inline const char* to_string(api_errc code) {
  switch (code) {
  case api_errc::none:
    return "none";
  case api_errc::invalid:
    return "invalid";
  case api_errc::not_found:
    return "not_found";
  case api_errc::conflict:
    return "conflict";
  case api_errc::unavailable:
    return "unavailable";
  case api_errc::internal:
    return "internal";
  case api_errc::outcome_unknown:
    return "outcome_unknown";
  }
  return "unknown";
}

inline caf::atom_value api_error_category() {
  return caf::atom("ef_api");
}

inline caf::error make_api_error(api_errc code, std::string message,
                                 std::string field = {}) {
  return caf::make_error(code, std::move(field), std::move(message));
}

} // namespace ef
