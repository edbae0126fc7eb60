// The Debian package (cmake/eventforge_package.cmake): built with the
// package target, its contents and control files read with dpkg-deb, its
// unit checked by systemd-analyze, its postinst run against stand-in
// commands, and its binary run from an extracted copy with its own
// configuration. Nothing is installed on the machine.

#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace ef;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string sh_quoted(const std::string& s) {
  return "'" + s + "'";
}

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

/// Runs the package target (which builds what is out of date first) and
/// returns the .deb it wrote into the build directory.
fs::path built_package() {
  auto [rc, out] =
    test::run_command(sh_quoted(EF_CMAKE_COMMAND) + " --build " +
                      sh_quoted(EF_BINARY_DIR) + " --target package");
  INFO("cmake --build --target package printed:\n" << out);
  REQUIRE(rc == 0);
  auto prefix = std::string("eventforge_") + EF_PACKAGE_VERSION + "_";
  for (auto& entry : fs::directory_iterator(EF_BINARY_DIR)) {
    auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && entry.path().extension() == ".deb")
      return entry.path();
  }
  FAIL("the package target wrote no " << prefix << "<arch>.deb into "
                                      << EF_BINARY_DIR);
  return {};
}

/// The package's files unpacked under `dir`/root, its control files under
/// `dir`/control.
void unpack(const fs::path& deb, const std::string& dir) {
  auto [rc, out] = test::run_command(
    "dpkg-deb -x " + sh_quoted(deb) + " " + sh_quoted(dir + "/root") +
    " && dpkg-deb -e " + sh_quoted(deb) + " " + sh_quoted(dir + "/control"));
  INFO(out);
  REQUIRE(rc == 0);
}

/// Stand-ins for the commands a maintainer script runs: each records its
/// command line in `dir`/calls; getent exits with `getent_rc`.
std::string stand_ins(const std::string& dir, int getent_rc) {
  auto bin = dir + "/bin";
  fs::create_directories(bin);
  for (const char* cmd :
       {"getent", "adduser", "mkdir", "chown", "chmod", "deb-systemd-helper",
        "deb-systemd-invoke", "systemctl"}) {
    auto path = bin + "/" + cmd;
    std::ofstream(path) << "#!/bin/sh\necho \"" << cmd << " $*\" >> "
                        << sh_quoted(dir + "/calls") << "\n"
                        << (std::string(cmd) == "getent"
                              ? "exit " + std::to_string(getent_rc) + "\n"
                              : "");
    fs::permissions(path, fs::perms::owner_all);
  }
  return bin;
}

} // namespace

TEST_CASE("the_package_target_builds_a_deb_with_the_binary_the_library_the_"
          "unit_and_the_config_as_a_conffile") {
  auto deb = built_package();
  auto [rc, listing] = test::run_command("dpkg-deb -c " + sh_quoted(deb));
  INFO("dpkg-deb -c printed:\n" << listing);
  REQUIRE(rc == 0);
  const std::string version = EF_PACKAGE_VERSION;
  for (auto path : std::vector<std::string>{
         " ./usr/bin/eventforge\n",
         " ./usr/lib/libeventforge-core.so." + version + "\n",
         " ./usr/lib/libeventforge-http.so." + version + "\n",
         " ./usr/include/eventforge/eventforge.hpp\n",
         " ./usr/lib/cmake/eventforge/eventforge-config.cmake\n",
         " ./lib/systemd/system/eventforge.service\n",
         " ./etc/eventforge/eventforge.ini\n"})
    CHECK(listing.find(path) != std::string::npos);

  test::temp_dir dir;
  unpack(deb, dir.path);
  CHECK(text_of(dir.path + "/control/conffiles") ==
        "/etc/eventforge/eventforge.ini\n");
  auto control = text_of(dir.path + "/control/control");
  INFO("control:\n" << control);
  CHECK(control.find("Package: eventforge\n") != std::string::npos);
  CHECK(control.find(std::string("Version: ") + EF_PACKAGE_VERSION + "\n") !=
        std::string::npos);
  CHECK(control.find("libsystemd0") != std::string::npos);
  CHECK(control.find("adduser") != std::string::npos);
  CHECK(text_of(dir.path + "/control/triggers") ==
        "activate-noawait ldconfig\n");
  // Every key at its default, commented out, but the data directory.
  auto ini = text_of(dir.path + "/root/etc/eventforge/eventforge.ini");
  CHECK(ini.find("\ndata-dir=\"/var/lib/eventforge/pg\"\n") !=
        std::string::npos);
  CHECK(ini.find("\n;brokers=\"\"\n") != std::string::npos);
}

TEST_CASE("the_packaged_unit_passes_systemd_analyze_verify_without_a_warning_"
          "and_its_security_exposure_stays_at_most_2") {
  auto deb = built_package();
  test::temp_dir dir;
  unpack(deb, dir.path);
  auto root = dir.path + "/root";
  // verify resolves the unit's dependencies (sysinit.target, ...) and its
  // ExecStart inside --root: the package's files plus this machine's units.
  const fs::path system_units = "/lib/systemd/system";
  REQUIRE(fs::exists(system_units / "sysinit.target"));
  fs::copy(system_units, root + "/lib/systemd/system",
           fs::copy_options::recursive | fs::copy_options::skip_existing |
             fs::copy_options::copy_symlinks);
  auto [rc, out] = test::run_command(
    "systemd-analyze verify --root=" + sh_quoted(root) + " eventforge.service");
  INFO("systemd-analyze verify printed:\n" << out);
  CHECK(rc == 0);
  // An unknown key or a bad value is only a warning to verify.
  CHECK(out.empty());
  // The hardening, as systemd scores it (0 best, 10 worst): 1.4 when this
  // test was written; more than 2.0 means an option was lost.
  auto unit = root + "/lib/systemd/system/eventforge.service";
  std::tie(rc, out) = test::run_command(
    "systemd-analyze security --offline=yes --threshold=20 --root=" +
    sh_quoted(root) + " " + sh_quoted(unit));
  INFO("systemd-analyze security printed:\n" << out);
  CHECK(rc == 0);
}

TEST_CASE("the_packaged_postinst_creates_the_system_user_and_its_state_"
          "directory_and_enables_the_service") {
  auto deb = built_package();
  test::temp_dir dir;
  unpack(deb, dir.path);
  auto postinst = sh_quoted(dir.path + "/control/postinst");
  auto calls = dir.path + "/calls";

  // A first install: no user yet.
  auto bin = stand_ins(dir.path + "/fresh", 2);
  auto [rc, out] = test::run_command(
    "PATH=" + sh_quoted(bin) + ":\"$PATH\" sh " + postinst + " configure ''");
  auto fresh = text_of(dir.path + "/fresh/calls");
  INFO("postinst printed: " << out << "\nand ran:\n" << fresh);
  CHECK(rc == 0);
  CHECK(fresh.find("adduser --system --group --home /var/lib/eventforge "
                   "--no-create-home") != std::string::npos);
  CHECK(fresh.find("mkdir -p /var/lib/eventforge\n") != std::string::npos);
  CHECK(fresh.find("chown eventforge:eventforge /var/lib/eventforge\n") !=
        std::string::npos);
  CHECK(fresh.find("chmod 0750 /var/lib/eventforge\n") != std::string::npos);
  CHECK(fresh.find("deb-systemd-helper enable eventforge.service\n") !=
        std::string::npos);

  // An upgrade: the user exists and is left alone.
  bin = stand_ins(dir.path + "/upgrade", 0);
  std::tie(rc, out) =
    test::run_command("PATH=" + sh_quoted(bin) + ":\"$PATH\" sh " + postinst +
                      " configure " + EF_PACKAGE_VERSION);
  auto upgrade = text_of(dir.path + "/upgrade/calls");
  INFO("postinst printed: " << out << "\nand ran:\n" << upgrade);
  CHECK(rc == 0);
  CHECK(upgrade.find("adduser") == std::string::npos);
  CHECK(upgrade.find("chown eventforge:eventforge /var/lib/eventforge\n") !=
        std::string::npos);
}

TEST_CASE("the_packaged_binary_serves_an_order_with_the_packaged_config") {
  auto deb = built_package();
  test::temp_dir dir;
  unpack(deb, dir.path);
  auto root = dir.path + "/root";
  // The installed configuration, but for the data directory (the
  // package's is /var/lib/eventforge/pg) and a free port.
  auto data_dir = dir.path + "/pg";
  test::seed_cluster(data_dir);
  test::child_process serve(
    {root + "/usr/bin/eventforge", "serve",
     "--config-file=" + root + "/etc/eventforge/eventforge.ini",
     "--database.data-dir=" + data_dir, "--http.port=0",
     "--log.level=" + test::test_log_level()},
    dir.path + "/serve.log");
  auto ready = serve.await_line("ready", 120s);
  INFO("serve's log: " << text_of(dir.path + "/serve.log"));
  REQUIRE_FALSE(ready.empty());

  auto [status, body] =
    test::post_json(test::ready_field(ready, "http"), "/orders",
                    test::order_body("package-customer", 2, 1500));
  INFO("POST /orders answered " << status << ": " << body);
  REQUIRE(status == 201);
  auto order_id = test::json_field(body, "order_id");
  pqxx::connection conn(test::ready_field(ready, "database"));
  auto count = [&](const std::string& sql) {
    pqxx::nontransaction t(conn);
    return t.exec_params1(sql, order_id)[0].as<int>();
  };
  CHECK(count("SELECT count(*) FROM orders WHERE id = $1") == 1);
  // The whole pipeline of the packaged build: both consumers applied it.
  CHECK(test::wait_until(
    [&] {
      return count("SELECT count(*) FROM business_effects WHERE order_id = "
                   "$1") == 2;
    },
    60s));
  serve.signal(SIGTERM);
  CHECK(serve.wait() == 0);
}
