#include "persistence/embedded_postgres.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace ef;

// The private cluster on a port another server holds: before the server's
// own pid file was consulted, a ping answered by the other server passed
// for readiness, and the second cluster's DSN led to the first one's data.
TEST_CASE("a_private_cluster_whose_port_another_server_holds_fails_naming_"
          "the_port_and_never_takes_the_other_server_for_its_own") {
  test::database first;
  first.exec("CREATE TABLE only_in_the_first (x int)");
  test::temp_dir dir;
  persistence::embedded_postgres::options opts;
  opts.data_dir = dir.path + "/pg";
  test::seed_cluster(opts.data_dir);
  opts.port = first.server().port(); // asked for: not ours to change
  opts.durable = false;
  std::string error;
  try {
    persistence::embedded_postgres second(opts);
    FAIL("the second cluster started on a taken port: " + second.dsn());
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  INFO(error);
  CHECK(error.find("exited during start-up") != std::string::npos);
  CHECK(error.find("Address already in use") != std::string::npos);
  // The first server and its data are untouched.
  CHECK(first.scalar<int>("SELECT count(*) FROM pg_tables WHERE tablename = "
                          "'only_in_the_first'") == 1);
}
