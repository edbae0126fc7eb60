// Makes the test run's template cluster: what initdb writes, once. ctest
// runs this as the fixture that every test starting a private PostgreSQL
// cluster requires; each of those starts from a copy (harness.cpp,
// seed_cluster) instead of its own initdb, which cost 1.3 s of CPU per test,
// a quarter of the suite's CPU on two cores.
// Usage: ef_pg_template DIR (DIR is replaced).

#include "persistence/embedded_postgres.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <sys/stat.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  const std::string target = argv[1];
  // initdb runs as "postgres" when we are root, so it works in a /tmp
  // directory that account can reach (the build directory may be under a
  // home it cannot); cp -a keeps owner and modes.
  char work[] = "/tmp/eventforge-template-XXXXXX";
  if (mkdtemp(work) == nullptr || ::chmod(work, 0755) != 0) {
    std::perror("cannot make a directory under /tmp");
    return 1;
  }
  int rc = 1;
  try {
    auto cluster = std::string(work) + "/pg";
    fs::create_directory(cluster);
    ef::persistence::embedded_postgres::initialize(
      cluster, ef::persistence::embedded_postgres::options{}.bin_dir);
    fs::remove_all(target);
    fs::remove_all(target + ".new");
    auto copy = "cp -a '" + cluster + "' '" + target + ".new'";
    if (std::system(copy.c_str()) != 0) {
      std::fprintf(stderr, "cannot copy the template cluster: %s failed\n",
                   copy.c_str());
    } else {
      fs::rename(target + ".new", target);
      std::printf("template cluster in %s\n", target.c_str());
      rc = 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot make the template cluster: %s\n", e.what());
  }
  std::error_code ignored;
  fs::remove_all(work, ignored);
  return rc;
}
