#pragma once

// Internal to persistence/: nothing above this folder includes pqxx.

#include "persistence/db_error.hpp"
#include "persistence/dsn.hpp"

#include <pqxx/pqxx>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ef::persistence {

/// Opens a connection with automatic reactivation off: a broken session must
/// surface (a relay's advisory lock dies with it), never be silently replaced.
std::unique_ptr<pqxx::connection> open_connection(const std::string& dsn);

/// Converts the libpqxx exception in flight into a classified db_error and
/// throws it; other exceptions are rethrown unchanged. Call only from inside
/// a catch block.
[[noreturn]] void rethrow_as_db_error();

/// PostgreSQL array literals for parameters cast with ::bigint[] / ::text[]
/// (libpqxx 6.4 has no array parameters). Text elements are quoted, so any
/// text is safe.
std::string array_literal(const std::vector<std::int64_t>& xs);
std::string array_literal(const std::vector<std::string>& names);
/// The same, with SQL NULL for an empty element.
std::string
nullable_array_literal(const std::vector<std::optional<std::string>>& xs);

/// A read-committed read-write transaction whose first statement travels
/// with its BEGIN, as one simple query: one round trip fewer than pqxx::work,
/// whose BEGIN travels alone (libpqxx 6.4). `opening` runs inside the
/// transaction; it is plain SQL without parameters, so any value in it must
/// be a number or quoted with the connection's quote(); empty: BEGIN alone.
/// If the opening
/// fails, the transaction is rolled back and the error thrown from the
/// constructor, as a failed statement would throw it.
class opening_transaction : public pqxx::internal::basic_transaction {
public:
  opening_transaction(pqxx::connection_base& c, const std::string& opening);
  ~opening_transaction() noexcept override;

private:
  void do_begin() override;

  std::string begin_;
};

/// A lazily (re)opened connection with prepared statements, reopened after it
/// broke. Stores own one each; it is not thread-safe.
class session {
public:
  using preparer = std::function<void(pqxx::connection&)>;
  session(std::string dsn, preparer prepare);
  ~session();

  /// The open connection, reconnecting (and re-preparing) if needed.
  pqxx::connection& get();

  /// Forgets the connection, e.g. after it broke.
  void reset();

  /// Runs `work(connection)`; if it throws (opening the connection
  /// included), forgets the connection (it may be broken) and rethrows
  /// libpqxx failures as a classified db_error, anything else unchanged.
  template <class Work>
  decltype(auto) run(Work&& work) {
    try {
      return std::forward<Work>(work)(get());
    } catch (...) {
      reset();
      rethrow_as_db_error();
    }
  }

  const std::string& dsn() const { return dsn_; }

private:
  std::string dsn_;
  preparer prepare_;
  std::unique_ptr<pqxx::connection> conn_;
};

} // namespace ef::persistence
