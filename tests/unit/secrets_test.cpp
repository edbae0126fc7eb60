// Secrets stay secret: DSN passwords are redacted wherever a DSN is shown,
// and the admin token can come from a file or the environment instead of a
// command line that `ps` shows.

#include "persistence/dsn.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/config/options.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

using ef::persistence::redact_password;

TEST_CASE("a_dsn_shows_no_password_in_either_form") {
  CHECK(redact_password("postgresql://app:s3cret@db.example:5432/orders") ==
        "postgresql://app:***@db.example:5432/orders");
  CHECK(redact_password("postgres://app:p%40ss@db/x?sslmode=require") ==
        "postgres://app:***@db/x?sslmode=require");
  CHECK(redact_password("postgresql://db/x?user=a&password=s3cret&sslmode=1") ==
        "postgresql://db/x?user=a&password=***&sslmode=1");
  CHECK(redact_password("postgresql://app@db/x") == "postgresql://app@db/x");
  CHECK(redact_password("host=db user=app password=s3cret dbname=x") ==
        "host=db user=app password=*** dbname=x");
  CHECK(redact_password("host=db password = 'it\\'s a secret' port=5") ==
        "host=db password = *** port=5");
  CHECK(redact_password("password=s3cret") == "password=***");
  CHECK(redact_password("host=/tmp port=5432") == "host=/tmp port=5432");
  CHECK(redact_password("") == "");
  // The client key's passphrase is a secret too, and a URI key may be
  // percent-encoded (libpq decodes it).
  CHECK(redact_password("host=db sslkey=/k sslpassword=keypass") ==
        "host=db sslkey=/k sslpassword=***");
  CHECK(redact_password("postgresql://db/x?sslpassword=keypass&sslmode=1") ==
        "postgresql://db/x?sslpassword=***&sslmode=1");
  CHECK(redact_password("postgresql://db/x?pass%77ord=s3cret") ==
        "postgresql://db/x?pass%77ord=***");
  CHECK(redact_password("postgresql://db/x?ssl%70assword=k&user=a") ==
        "postgresql://db/x?ssl%70assword=***&user=a");
}

TEST_CASE("the_admin_token_comes_from_a_file_or_the_environment_and_never_"
          "from_two_places") {
  ef::test::temp_dir dir;
  auto file = dir.path + "/token";
  std::ofstream(file) << "ops:from-the-file\n";
  auto r = ef::config::build_settings({{"http.admin-token-file", file}});
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.value.http.admin_token == "ops:from-the-file");
  // Two sources is a mistake, named.
  auto two = ef::config::build_settings(
    {{"http.admin-token-file", file}, {"http.admin-token", "x"}});
  REQUIRE_FALSE(two.ok());
  CHECK(two.error.find("http.admin-token-file") != std::string::npos);
  CHECK(two.error.find("http.admin-token") != std::string::npos);
  // A file that cannot be read, or is empty, stops start-up by name.
  auto missing =
    ef::config::build_settings({{"http.admin-token-file", file + ".gone"}});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error.find("cannot read http.admin-token-file") == 0);
  std::ofstream(dir.path + "/empty") << "\n";
  auto empty = ef::config::build_settings(
    {{"http.admin-token-file", dir.path + "/empty"}});
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error.find("is empty") != std::string::npos);
  // The environment, when nothing else names a token.
  ::setenv("EVENTFORGE_ADMIN_TOKEN", "ops:from-the-environment", 1);
  auto env = ef::config::build_settings({});
  CHECK(env.value.http.admin_token == "ops:from-the-environment");
  auto file_wins =
    ef::config::build_settings({{"http.admin-token-file", file}});
  CHECK(file_wins.ok());
  CHECK(file_wins.value.http.admin_token == "ops:from-the-file");
  ::unsetenv("EVENTFORGE_ADMIN_TOKEN");
  CHECK(ef::config::build_settings({}).value.http.admin_token.empty());
}
