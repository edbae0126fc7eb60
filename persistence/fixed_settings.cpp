#include "persistence/fixed_settings.hpp"

#include "persistence/connection.hpp"

#include <stdexcept>

namespace ef::persistence {

void require_fixed_setting(const std::string& dsn, const std::string& key,
                           const std::string& value) {
  std::string stored;
  try {
    auto conn = open_connection(dsn);
    pqxx::work w(*conn);
    w.exec_params("INSERT INTO fixed_settings (key, value) VALUES ($1, $2) "
                  "ON CONFLICT (key) DO NOTHING",
                  key, value);
    stored =
      w.exec_params1("SELECT value FROM fixed_settings WHERE key = $1", key)[0]
        .as<std::string>();
    w.commit();
  } catch (...) {
    rethrow_as_db_error();
  }
  if (stored != value)
    throw std::runtime_error(
      key + " is " + value + " here, but this database was set up with " + key +
      "=" + stored +
      ": outbox rows carry their shard, so another value would leave rows "
      "unpublished or split one order's events across relays. Start with --" +
      key + "=" + stored);
}

} // namespace ef::persistence
