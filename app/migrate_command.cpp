// `eventforge migrate`: apply pending schema migrations and exit, on the
// configured database or the embedded one.

#include "app/command.hpp"
#include "persistence/embedded_postgres.hpp"
#include "persistence/migrations.hpp"

#include <iostream>
#include <memory>

namespace ef::app {
namespace {

class migrate_cmd final : public command {
public:
  const char* name() const override { return "migrate"; }
  const char* help() const override {
    return "apply pending schema migrations and exit";
  }
  int run(configuration& c) override {
    const auto& db = c.settings.database;
    std::unique_ptr<persistence::embedded_postgres> pg;
    auto dsn = db.url;
    if (dsn.empty()) {
      pg = std::make_unique<persistence::embedded_postgres>(
        persistence::embedded_postgres::options{db.data_dir, db.pg_bin_dir,
                                                db.port});
      dsn = pg->dsn();
    }
    auto applied = persistence::migrate(dsn);
    std::cout << "schema at version "
              << persistence::migrations().back().version << " ("
              << applied.size() << " applied now)" << std::endl;
    return 0;
  }
};

} // namespace

std::unique_ptr<command> migrate_command() {
  return std::make_unique<migrate_cmd>();
}

} // namespace ef::app
