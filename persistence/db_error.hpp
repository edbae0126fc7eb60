#pragma once

#include <caf/error.hpp>
#include <caf/make_message.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ef::persistence {

/// How a database failure should be treated by the caller. The mapping from
/// libpqxx exceptions happens in exactly one place (connection.cpp).
enum class db_errc : std::uint8_t {
  /// Not a failure. A caf::error whose code is 0 is no error at all (CAF
  /// 0.17), so the failures start at 1 and travel as they are, e.g. as the
  /// exit reason of an actor that met an outage (category "ef_db").
  none = 0,
  /// The server could not be reached or the session broke before commit:
  /// nothing was written, the whole transaction may be redone.
  unavailable,
  /// The connection broke during COMMIT: the outcome is unknown. Never retry
  /// blindly; let an idempotency guard settle it.
  in_doubt,
  /// Serialization failure, deadlock, lock or statement timeout: redo the
  /// whole transaction.
  transient,
  /// Anything else (constraint violation, bad SQL): retrying cannot help.
  permanent,
};

} // namespace ef::persistence

CAF_ERROR_CODE_ENUM(ef::persistence::db_errc, "ef_db")

namespace ef::persistence {

const char* to_string(db_errc code);

/// A database failure, classified. Thrown by the stores in persistence/.
class db_error : public std::runtime_error {
public:
  db_error(db_errc code, const std::string& what, std::string sqlstate = {})
      : std::runtime_error(what), code_(code), sqlstate_(std::move(sqlstate)) {
    // nop
  }
  db_errc code() const noexcept { return code_; }
  const std::string& sqlstate() const noexcept { return sqlstate_; }
  bool retriable() const noexcept {
    return code_ == db_errc::unavailable || code_ == db_errc::transient;
  }

private:
  db_errc code_;
  std::string sqlstate_;
};

} // namespace ef::persistence
