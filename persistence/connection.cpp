#include "persistence/connection.hpp"

#include <cctype>
#include <cstdio>

namespace ef::persistence {

const char* to_string(db_errc code) {
  switch (code) {
  case db_errc::none:
    return "none";
  case db_errc::unavailable:
    return "unavailable";
  case db_errc::in_doubt:
    return "in_doubt";
  case db_errc::transient:
    return "transient";
  case db_errc::permanent:
    return "permanent";
  }
  return "unknown";
}

std::string with_dsn_param(const std::string& dsn, const std::string& key,
                           const std::string& value) {
  bool uri =
    dsn.rfind("postgres://", 0) == 0 || dsn.rfind("postgresql://", 0) == 0;
  if (uri) {
    std::string encoded;
    for (unsigned char ch : value) {
      if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.') {
        encoded += static_cast<char>(ch);
      } else {
        char buf[4];
        std::snprintf(buf, sizeof(buf), "%%%02X", ch);
        encoded += buf;
      }
    }
    return dsn + (dsn.find('?') == std::string::npos ? "?" : "&") + key + "=" +
           encoded;
  }
  std::string quoted = "'";
  for (char ch : value) {
    if (ch == '\\' || ch == '\'')
      quoted += '\\';
    quoted += ch;
  }
  quoted += "'";
  return dsn.empty() ? key + "=" + quoted : dsn + " " + key + "=" + quoted;
}

std::string with_node_name(const std::string& dsn, const std::string& node) {
  if (node.empty() || dsn.find("application_name") != std::string::npos)
    return dsn;
  return with_dsn_param(dsn, "application_name", node_session_prefix + node);
}

opening_transaction::opening_transaction(pqxx::connection_base& c,
                                         const std::string& opening)
    : pqxx::internal::namedclass{fullname("transaction",
                                          pqxx::isolation_traits<
                                            pqxx::read_committed>::name()),
                                 ""},
      pqxx::internal::basic_transaction(
        c, pqxx::isolation_traits<pqxx::read_committed>::name(),
        pqxx::read_write),
      begin_(opening.empty() ? "BEGIN" : "BEGIN; " + opening) {
  Begin();
}

opening_transaction::~opening_transaction() noexcept {
  End();
}

void opening_transaction::close_with(std::string closing) {
  closing_ = std::move(closing);
}

std::string execute_sql(pqxx::connection_base& c, const std::string& name,
                        const std::vector<std::string>& args) {
  // libpqxx sends a prepare()d statement to the server at its first
  // exec_prepared(); EXECUTE needs it there already. A no-op once it is.
  c.prepare_now(name);
  std::string sql = "EXECUTE " + c.quote_name(name) + "(";
  for (size_t i = 0; i < args.size(); ++i)
    sql += (i == 0 ? "" : ", ") + c.quote(args[i]);
  return sql + ")";
}

void opening_transaction::do_commit() {
  // libpqxx's own COMMIT (basic_transaction's, private to it) would cost a
  // round trip of its own after the closing's; the outcomes are the same.
  try {
    direct_exec(
      (closing_.empty() ? std::string("COMMIT") : closing_ + "; COMMIT")
        .c_str());
  } catch (const pqxx::statement_completion_unknown& e) {
    throw pqxx::in_doubt_error("the outcome of COMMIT is unknown: " +
                               std::string(e.what()));
  } catch (const std::exception& e) {
    if (!conn().is_open())
      throw pqxx::in_doubt_error("the connection was lost while committing: " +
                                 std::string(e.what()));
    // A closing statement (or COMMIT, refused) failed: the session may be
    // in a failed transaction block that libpqxx believes ended with the
    // failed commit, so it would never roll it back.
    try {
      direct_exec("ROLLBACK");
    } catch (...) {
      // the connection is unusable; its next use says so
    }
    throw;
  }
}

void opening_transaction::do_begin() {
  try {
    opened_ = direct_exec(begin_.c_str());
  } catch (const pqxx::broken_connection&) {
    throw; // nothing left to roll back
  } catch (...) {
    // BEGIN succeeded, the opening did not: the session is inside a failed
    // transaction block, which libpqxx does not know it opened (Begin()
    // failed), so it would never end it.
    try {
      direct_exec("ROLLBACK");
    } catch (...) {
      // the connection is unusable; its next use says so
    }
    throw;
  }
}

namespace {

/// `text` with each %XX replaced by its byte (a malformed one stays).
std::string percent_decoded(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

/// libpq's keywords whose values are secrets; in a URI a key may be
/// percent-encoded ("pass%77ord" is "password" to libpq).
bool is_secret_key(const std::string& key) {
  auto k = percent_decoded(key);
  return k == "password" || k == "sslpassword";
}

std::string redact_uri(const std::string& dsn, size_t authority) {
  std::string out = dsn;
  auto end = out.find_first_of("/?", authority);
  auto at = out.rfind('@', end == std::string::npos ? out.size() : end);
  if (at != std::string::npos && at >= authority) {
    auto colon = out.find(':', authority);
    if (colon != std::string::npos && colon < at)
      out.replace(colon + 1, at - colon - 1, "***");
  }
  // ?password=...&...
  auto query = out.find('?');
  while (query != std::string::npos) {
    auto key = query + 1;
    auto eq = out.find('=', key);
    auto amp = out.find('&', key);
    if (eq != std::string::npos && (amp == std::string::npos || eq < amp) &&
        is_secret_key(out.substr(key, eq - key))) {
      auto value_end = amp == std::string::npos ? out.size() : amp;
      out.replace(eq + 1, value_end - eq - 1, "***");
      amp = out.find('&', eq);
    }
    query = amp;
  }
  return out;
}

std::string redact_keywords(const std::string& dsn) {
  std::string out;
  size_t i = 0;
  auto space = [&](size_t k) {
    return k < dsn.size() && std::isspace(static_cast<unsigned char>(dsn[k]));
  };
  while (i < dsn.size()) {
    auto start = i;
    while (space(i))
      ++i;
    auto key_begin = i;
    while (i < dsn.size() && dsn[i] != '=' && !space(i))
      ++i;
    auto key = dsn.substr(key_begin, i - key_begin);
    while (space(i))
      ++i;
    if (i >= dsn.size() || dsn[i] != '=') { // not key=value: keep as is
      out += dsn.substr(start);
      break;
    }
    ++i;
    while (space(i))
      ++i;
    auto value_begin = i;
    if (i < dsn.size() && dsn[i] == '\'') {
      for (++i; i < dsn.size() && dsn[i] != '\''; ++i)
        if (dsn[i] == '\\')
          ++i;
      i = std::min(dsn.size(), i + 1);
    } else {
      while (i < dsn.size() && !space(i))
        ++i;
    }
    out += dsn.substr(start, value_begin - start);
    out += is_secret_key(key) ? std::string("***")
                              : dsn.substr(value_begin, i - value_begin);
  }
  return out;
}

} // namespace

std::string redact_password(const std::string& dsn) {
  for (auto scheme : {"postgresql://", "postgres://"})
    if (dsn.rfind(scheme, 0) == 0)
      return redact_uri(dsn, std::string(scheme).size());
  return redact_keywords(dsn);
}

std::string with_connect_timeout(const std::string& dsn, int seconds) {
  if (dsn.find("connect_timeout") != std::string::npos)
    return dsn;
  return with_dsn_param(dsn, "connect_timeout", std::to_string(seconds));
}

std::unique_ptr<pqxx::connection> open_connection(const std::string& dsn) {
  try {
    auto c = std::make_unique<pqxx::connection>(dsn);
    // Deprecated in 6.4 because 7.0 drops reactivation altogether, which is
    // the behaviour we want now.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    c->inhibit_reactivation(true);
#pragma GCC diagnostic pop
    return c;
  } catch (...) {
    rethrow_as_db_error();
  }
}

void rethrow_as_db_error() {
  try {
    throw;
  } catch (const db_error&) {
    throw;
  } catch (const pqxx::in_doubt_error& e) {
    throw db_error(db_errc::in_doubt, e.what());
  } catch (const pqxx::statement_completion_unknown& e) {
    throw db_error(db_errc::in_doubt, e.what(), "40003");
  } catch (const pqxx::transaction_rollback& e) {
    // In libpqxx 6.4 these (40001 serialization failure, 40P01 deadlock)
    // derive from pqxx::failure, not pqxx::sql_error.
    throw db_error(db_errc::transient, e.what());
  } catch (const pqxx::broken_connection& e) {
    throw db_error(db_errc::unavailable, e.what());
  } catch (const pqxx::sql_error& e) {
    std::string state = e.sqlstate();
    // 40001 serialization_failure, 40P01 deadlock_detected,
    // 55P03 lock_not_available, 57014 query_canceled (statement_timeout).
    bool transient = state == "40001" || state == "40P01" || state == "55P03" ||
                     state == "57014";
    // Class 08 (connection exception) and 57P01..57P03 (admin shutdown,
    // crash shutdown, cannot connect now) mean the session is gone. A full
    // disk, exhausted memory or connection slots (53100, 53200, 53300) and
    // a server that became a read-only standby after a failover (25006)
    // are outages too: the statement is not at fault, and a new session
    // (perhaps on the new primary) may succeed once the server recovers.
    bool gone = state.rfind("08", 0) == 0 || state == "57P01" ||
                state == "57P02" || state == "57P03" || state == "53100" ||
                state == "53200" || state == "53300" || state == "25006";
    throw db_error(gone        ? db_errc::unavailable
                   : transient ? db_errc::transient
                               : db_errc::permanent,
                   e.what(), state);
  } catch (const pqxx::failure& e) {
    // libpq-level errors that are not SQL errors, e.g. a socket error seen
    // while reading a result.
    throw db_error(db_errc::unavailable, e.what());
  } catch (const pqxx::unexpected_rows& e) {
    // A statement that must return one row returned none or several: a
    // concurrent change (e.g. retention deleting the row meanwhile).
    throw db_error(db_errc::transient, e.what());
  } catch (const pqxx::usage_error& e) {
    throw db_error(db_errc::permanent, e.what());
  } catch (const pqxx::conversion_error& e) {
    throw db_error(db_errc::permanent, e.what());
  }
  // Anything else is not a database failure (e.g. a crash injected by a
  // caller's hook): it propagates unchanged.
}

session::session(std::string dsn, preparer prepare)
    : dsn_(std::move(dsn)), prepare_(std::move(prepare)) {
  // nop
}

session::~session() = default;

pqxx::connection& session::get() {
  if (conn_ && !conn_->is_open())
    conn_.reset();
  if (!conn_) {
    conn_ = open_connection(dsn_);
    ++generation_;
    if (prepare_)
      prepare_(*conn_);
  }
  return *conn_;
}

void session::reset() {
  conn_.reset();
}

} // namespace ef::persistence
