#pragma once

// Internal to persistence/: nothing above this folder includes pqxx.

#include "messages/text.hpp"
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

// PostgreSQL array literals (messages/text.hpp), for statements here.
using ef::array_literal;
using ef::nullable_array_literal;

/// A read-committed read-write transaction whose first statement travels
/// with its BEGIN, as one simple query: one round trip fewer than pqxx::work,
/// whose BEGIN travels alone (libpqxx 6.4). `opening` runs inside the
/// transaction; it is plain SQL without parameters, so any value in it must
/// be a number or quoted with the connection's quote(); empty: BEGIN alone.
/// If the opening
/// fails, the transaction is rolled back and the error thrown from the
/// constructor, as a failed statement would throw it.
///
/// Its last statement's rows are kept (opened()), so a read that needs
/// nothing from the client but the opening's locks travels with them; and
/// the last writes can travel with the COMMIT (close_with()). Each round
/// trip saved is a wake-up of the client's thread and of the server's
/// backend. Several statements in one simple query still run one after the
/// other, each with its own snapshot (read committed): a statement after a
/// lock sees what was committed before the lock was granted.
class opening_transaction : public pqxx::internal::basic_transaction {
public:
  opening_transaction(pqxx::connection_base& c, const std::string& opening);
  ~opening_transaction() noexcept override;

  /// The rows of the opening's last statement (none for BEGIN alone).
  const pqxx::result& opened() const { return opened_; }

  /// Statements that commit() sends in COMMIT's own round trip, before it:
  /// plain SQL like the opening (a prepared statement runs as `EXECUTE
  /// name(quoted literals)`); their rows are not returned. If one fails,
  /// COMMIT never runs: commit() rolls the transaction back and throws that
  /// error. A connection lost on the way is in doubt, as for COMMIT alone.
  void close_with(std::string closing);

private:
  void do_begin() override;
  void do_commit() override;

  std::string begin_;
  std::string closing_;
  pqxx::result opened_;
};

/// `EXECUTE name(args...)` for an opening or a closing: each argument
/// quoted with the connection's quote(). Runs a statement prepare()d on the
/// connection (protocol-level and SQL prepared statements share one name
/// space) with the same plans as exec_prepared; sends it to the server
/// first if it is not there yet (one round trip, once per connection).
std::string execute_sql(pqxx::connection_base& c, const std::string& name,
                        const std::vector<std::string>& args);

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

  /// How many connections this session opened: what was prepared on the
  /// server under one generation is gone under the next.
  std::uint64_t generation() const { return generation_; }

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
  std::uint64_t generation_ = 0;
};

} // namespace ef::persistence
