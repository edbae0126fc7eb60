#include "app/cli.hpp"
#include "config/reference.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/config/caf_options.hpp>
#include <eventforge/config/options.hpp>
#include <eventforge/embedded/runtime.hpp>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace ef::config;

namespace {

/// Writes `text` to a file in `dir` and returns its path.
std::string write_file(const ef::test::temp_dir& dir, const std::string& name,
                       const std::string& text) {
  auto path = dir.path + "/" + name;
  std::ofstream(path) << text;
  return path;
}

/// `eventforge serve ARGS` as main() resolves it: CLI11, then CAF, then the
/// option table. Returns the error ("" on success).
std::string resolve_serve(const std::string& args,
                          ef::app::configuration& out) {
  CLI::App app;
  auto* serve = app.add_subcommand("serve");
  ef::app::config_options opts(*serve);
  app.parse("serve " + args);
  std::string error;
  opts.resolve(out, error);
  return error;
}

} // namespace

TEST_CASE("defaults_build_without_any_value") {
  auto r = build_settings({});
  REQUIRE(r.ok());
  CHECK(r.value.http.host == "127.0.0.1");
  CHECK(r.value.kafka.partitions == 6);
  CHECK(r.value.relay.shards == 4);
  CHECK(r.value.database.url.empty());
  CHECK(r.value.kafka.brokers.empty());
}

TEST_CASE("one_ini_file_sets_a_caf_scheduler_option_and_an_eventforge_option_"
          "and_both_take_effect") {
  ef::test::temp_dir dir;
  // CAF's default is max(cores, 4) workers, so 3 can only come from the file.
  auto path = write_file(dir, "both.ini",
                         "[scheduler]\nmax-threads=3\n\n[api]\nworkers=5\n");
  ef::config::actor_system_config cfg;
  REQUIRE_FALSE(cfg.parse({}, path.c_str()));
  auto r = read_settings(cfg, path);
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.value.api.workers == 5);
  ef::configure_actor_system(cfg); // as every host does (TSan: the scheduler)
  caf::actor_system sys{cfg};
  CHECK(sys.scheduler().num_workers() == 3);
}

TEST_CASE("eventforge_resolves_file_then_command_line_through_caf") {
  ef::test::temp_dir dir;
  auto path = write_file(dir, "f.ini",
                         "; comment\n[kafka]\nbrokers=\"a:1,b:2\"\n"
                         "partitions=12\n\n[relay]\nshards = 8 ; trailing\n"
                         "[scheduler]\nmax-threads=3\n[demo]\nenabled=true\n"
                         "[http]\nadmin-token=\"x\"\n");
  ef::app::configuration out;
  auto error = resolve_serve("--config-file=" + path +
                               " --relay.shards=2 --scheduler.max-threads=2"
                               " --demo.enabled=false"
                               " --consumer.enabled=billing,shipping",
                             out);
  REQUIRE(error == "");
  CHECK(out.settings.kafka.brokers == "a:1,b:2");
  CHECK(out.settings.kafka.partitions == 12);
  CHECK(out.settings.relay.shards == 2); // the command line wins
  CHECK_FALSE(out.settings.demo.enabled);
  CHECK(out.settings.http.admin_token == "x");
  CHECK(out.settings.consumer.enabled ==
        std::vector<std::string>{"billing", "shipping"});
  ef::configure_actor_system(out.caf);
  caf::actor_system sys{out.caf};
  CHECK(sys.scheduler().num_workers() == 2);
}

TEST_CASE("without_a_file_eventforge_reads_no_caf_application_ini") {
  ef::test::temp_dir dir;
  write_file(dir, "caf-application.ini", "[api]\nworkers=7\n");
  auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path);
  ef::app::configuration out;
  auto error = resolve_serve("", out);
  std::filesystem::current_path(cwd);
  REQUIRE(error == "");
  CHECK(out.settings.api.workers == settings{}.api.workers);
}

TEST_CASE("bad_ini_files_stop_naming_file_and_key_and_change_nothing") {
  ef::test::temp_dir dir;
  struct bad {
    const char* text;
    std::string says;
  };
  for (auto& b : std::vector<bad>{
         {"[api]\nwrokers=4\n", "bad.ini: unknown config key \"api.wrokers\" "
                                "(did you mean \"api.workers\"?)"},
         {"[api]\nworkers=\"abc\"\n",
          "bad.ini: invalid value for api.workers: expected an integer, got "
          "\"abc\""},
         {"[api]\nworkers=100\n",
          "bad.ini: invalid value for api.workers: must be between 1 and 64"},
         {"[api.sub]\nx=1\n", "bad.ini: unknown config key \"api.sub\""},
         {"[demo]\nenabled=1\n",
          "bad.ini: invalid value for demo.enabled: must be true or false"},
         {"[chaos]\npoints=[\"nowhere\"]\n",
          "bad.ini: invalid value for chaos.points: unknown name \"nowhere\""},
         // Syntax errors: file, line and column, and the line's key.
         {"[scheduler]\nmax-threads=3\n[kafka]\nbrokers=a:1\n",
          "bad.ini:4:10: kafka.brokers: unexpected character"},
         {"[relay]\nshards=2 # comment\n",
          "bad.ini:2:11: relay.shards: trailing character"},
       }) {
    auto path = write_file(dir, "bad.ini", b.text);
    ef::app::configuration out;
    out.settings.api.workers = 9;
    auto error = resolve_serve("--config-file=" + path, out);
    INFO(b.text << " gave: " << error);
    CHECK(error.find(b.says) != std::string::npos);
    CHECK(error.find(path) != std::string::npos);
    CHECK(out.settings.api.workers == 9); // nothing was changed
  }
  ef::app::configuration out;
  CHECK(resolve_serve("--config-file=" + dir.path + "/missing.ini", out) ==
        "cannot read config file " + dir.path + "/missing.ini");
  // A rule across keys names the keys (they may come from anywhere).
  auto path =
    write_file(dir, "cross.ini", "[processed-events]\nretention=60\n");
  CHECK(resolve_serve("--config-file=" + path, out)
          .find("invalid value for processed-events.retention") == 0);
}

TEST_CASE("bad_command_line_values_stop_naming_the_key") {
  ef::app::configuration out;
  CHECK(resolve_serve("--api.workers=abc", out) ==
        "invalid value for api.workers: expected an integer, got \"abc\"");
  CHECK(resolve_serve("--demo.enabled=yes", out) ==
        "invalid value for demo.enabled: must be true or false, got \"yes\"");
  CHECK(resolve_serve("--scheduler.max-threads=many", out)
          .find("--scheduler.max-threads=many") != std::string::npos);
}

TEST_CASE("a_section_a_host_declared_is_left_to_it_and_one_nobody_declared_"
          "is_refused_however_far_its_name_is") {
  struct host_config : ef::config::actor_system_config {
    host_config() {
      opt_group{custom_options_, "myhost"}.add(anything, "anything", "x");
    }
    std::string anything;
  };
  ef::test::temp_dir dir;
  auto path = write_file(dir, "host.ini",
                         "[scheduler]\npolicy='sharing'\n[myhost]\nanything="
                         "\"goes\"\n[api]\nworkers=3\n");
  host_config cfg;
  REQUIRE_FALSE(cfg.parse({}, path.c_str()));
  auto r = read_settings(cfg, path);
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.value.api.workers == 3);
  // Nobody declared [elsewhere]: its keys would be silently ignored.
  auto undeclared = write_file(dir, "undeclared.ini", "[elsewhere]\nx=1\n");
  ef::config::actor_system_config plain;
  REQUIRE_FALSE(plain.parse({}, undeclared.c_str()));
  CHECK(read_settings(plain, undeclared).error ==
        undeclared +
          ": unknown section [elsewhere]: no option is declared in it (a "
          "host declares the sections it reads)");
}

TEST_CASE("a_misspelled_section_stops_start_up_naming_the_section_it_is_near") {
  ef::test::temp_dir dir;
  for (auto [section, near] :
       {std::pair{"consumers", "consumer"}, std::pair{"kafak", "kafka"},
        std::pair{"schedular", "scheduler"}, std::pair{"loging", "log"}}) {
    auto path = write_file(dir, "typo.ini",
                           std::string("[") + section + "]\nenabled=\"x\"\n");
    ef::config::actor_system_config cfg;
    REQUIRE_FALSE(cfg.parse({}, path.c_str()));
    auto r = read_settings(cfg, path);
    CHECK(r.error == path + ": unknown section [" + section +
                       "]: no option is declared in it (did you mean [" + near +
                       "]?)");
  }
}

TEST_CASE("a_host_checks_its_own_section_as_strictly_as_eventforge_its_own") {
  struct host_config : ef::config::actor_system_config {
    host_config() {
      opt_group{custom_options_, "host"}.add(orders, "orders", "orders");
    }
    int orders = 40;
  };
  ef::test::temp_dir dir;
  auto check = [&](const std::string& text) {
    auto path = write_file(dir, "host.ini", text);
    host_config cfg;
    REQUIRE_FALSE(cfg.parse({}, path.c_str()));
    auto err = ef::config::check_section(cfg, path, "host");
    return err.empty() ? err : err.substr(path.size() + 2);
  };
  CHECK(check("[host]\norders=12\n").empty());
  CHECK(check("[host]\nordres=12\n") ==
        "[host] ordres: unknown key (did you mean orders?) (declared: orders)");
  CHECK(check("[host]\norders=\"forty\"\n") ==
        "[host] orders = \"forty\": not a value of type int32");
}

TEST_CASE("caf_s_fallback_config_file_is_no_file_when_it_does_not_exist") {
  ef::config::actor_system_config cfg;
  REQUIRE_FALSE(cfg.parse({}, nullptr));
  CHECK(ef::config::config_file_of(cfg).empty());
  cfg.config_file_path = "/nonexistent/named.ini";
  CHECK(ef::config::config_file_of(cfg) == "/nonexistent/named.ini");
  CHECK(read_settings(cfg, ef::config::config_file_of(cfg)).error ==
        "cannot read config file /nonexistent/named.ini");
}

TEST_CASE("unknown_config_key_is_rejected_by_name") {
  auto r = build_settings({{"kafka.partitons", "3"}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error == "unknown config key \"kafka.partitons\" (did you mean "
                   "\"kafka.partitions\"?)");
}

TEST_CASE("invalid_config_values_are_rejected_naming_the_key") {
  struct bad {
    const char* key;
    const char* value;
    const char* says;
  };
  for (auto b : {bad{"relay.shards", "0", "must be between 1 and 1024"},
                 bad{"http.port", "http", "expected an integer"},
                 bad{"http.port", "70000", "must be between 0 and 65535"},
                 bad{"kafka.topic", "bad topic", "may contain only"},
                 bad{"log.level", "loud", "must be one of"},
                 bad{"consumer.enabled", "Shipping", "invalid name"},
                 bad{"consumer.enabled", "billing,a b", "invalid name"},
                 bad{"consumer.enabled", "billing,billing", "listed twice"},
                 bad{"chaos.points", "nowhere", "unknown name"},
                 bad{"kafka.partitions", "3.5", "expected an integer"},
                 bad{"demo.enabled", "yes", "must be true or false"},
                 bad{"demo.enabled", "", "must be true or false"}}) {
    auto r = build_settings({{b.key, b.value}});
    INFO(b.key << "=" << b.value << " gave: " << r.error);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error.find(b.key) != std::string::npos);
    CHECK(r.error.find(b.says) != std::string::npos);
  }
}

TEST_CASE("demo_mode_is_refused_by_the_configuration_itself_unless_http_"
          "listens_on_loopback") {
  for (auto host : {"0.0.0.0", "::", "192.168.1.10", "example.com", "[::]",
                    "::ffff:10.0.0.1"}) {
    auto r = build_settings({{"http.host", host}, {"demo.enabled", "true"}});
    INFO(host << " gave: " << r.error);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error.find("invalid value for demo.enabled") == 0);
    CHECK(r.error.find(host) != std::string::npos);
  }
  // Every spelling of loopback, in any order of the keys.
  for (auto host : {"127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]",
                    "::ffff:127.0.0.1"}) {
    auto r = build_settings({{"demo.enabled", "true"}, {"http.host", host}});
    INFO(host << " gave: " << r.error);
    CHECK(r.ok());
  }
  // The same from a config file and from the command line.
  ef::app::configuration out;
  CHECK(resolve_serve("--demo.enabled=true --http.host=0.0.0.0", out)
          .find("invalid value for demo.enabled") == 0);
  CHECK(build_settings({{"http.host", "0.0.0.0"}}).ok());
}

TEST_CASE("a_resolved_dlq_entry_is_pruned_not_deleted_so_its_retention_may_"
          "be_shorter_than_the_outbox_rows") {
  // The decision stays in the entry's row and in a "discarded" mark: a
  // short dlq.retention no longer lets a repair apply a discarded event.
  CHECK(build_settings({{"dlq.retention", "60"}}).ok());
  CHECK(build_settings({{"dlq.retention", "0"}}).ok());
  CHECK(build_settings({{"dlq.retention", "604800"}}).ok());
  auto r = build_settings({{"dlq.retention", "-1"}});
  CHECK_FALSE(r.ok());
  CHECK(r.error.find("dlq.retention") != std::string::npos);
}

TEST_CASE("consumer_names_are_any_well_formed_names") {
  auto r = build_settings({{"consumer.enabled", "billing,my-consumer_2"}});
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.value.consumer.enabled ==
        std::vector<std::string>{"billing", "my-consumer_2"});
}

TEST_CASE("every_option_renders_its_default_and_accepts_it_back") {
  settings defaults;
  for (auto& o : options()) {
    settings s;
    INFO(o.key);
    CHECK_FALSE(o.description.empty());
    auto text = o.render(defaults);
    CHECK_FALSE(o.apply(s, text).has_value());
    CHECK(o.render(s) == text);
  }
}

TEST_CASE("docs_config_md_matches_the_option_table") {
  std::ifstream f(EF_SOURCE_DIR "/docs/config.md");
  REQUIRE(f.good());
  std::stringstream text;
  text << f.rdbuf();
  INFO("regenerate with: build/eventforge config-reference > docs/config.md");
  CHECK(text.str() == ef::config::reference_markdown());
}

TEST_CASE("the_example_ini_file_matches_the_option_table_and_loads_to_the_"
          "defaults") {
  std::string path = EF_SOURCE_DIR "/config/eventforge.ini.example";
  std::ifstream f(path);
  REQUIRE(f.good());
  std::stringstream text;
  text << f.rdbuf();
  INFO("regenerate with: build/eventforge config-reference --ini > "
       "config/eventforge.ini.example");
  CHECK(text.str() == ef::config::reference_ini());
  ef::config::actor_system_config cfg;
  auto err = cfg.parse({}, path.c_str());
  INFO(describe_parse_error(err, path));
  REQUIRE_FALSE(err);
  // CAF drops a value of another type than the declared one: every key is
  // still there only if the file writes each as CAF expects it.
  for (auto& o : ef::config::options()) {
    INFO(o.key);
    CHECK(cfg.content.contains(o.key.substr(0, o.key.find('.'))));
    CHECK(caf::get_if(&cfg.content, o.key) != nullptr);
  }
  auto built = read_settings(cfg, path);
  INFO(built.error);
  REQUIRE(built.ok());
  ef::config::settings defaults;
  for (auto& o : ef::config::options()) {
    INFO(o.key);
    CHECK(o.render(built.value) == o.render(defaults));
  }
}

TEST_CASE("settings_a_host_builds_in_code_get_the_command_lines_checks_in_"
          "its_words_and_nothing_starts") {
  using ef::config::build_settings;
  using ef::config::check_settings;
  CHECK_FALSE(check_settings(ef::config::settings{}));
  CHECK_FALSE(check_settings(ef::test::test_settings()));
  // A value out of range, and a constraint across keys: the CLI's message.
  auto partitions = ef::test::test_settings();
  partitions.kafka.partitions = 0;
  auto cli = build_settings({{"kafka.partitions", "0"}}).error;
  REQUIRE_FALSE(cli.empty());
  CHECK(check_settings(partitions) == cli);
  auto backoff = ef::test::test_settings();
  backoff.consumer.backoff_initial_ms = 500;
  backoff.consumer.backoff_max_ms = 100;
  CHECK(check_settings(backoff) ==
        build_settings({{"consumer.backoff-initial-ms", "500"},
                        {"consumer.backoff-max-ms", "100"}})
          .error);
  // Refused by every entry point a host uses, before anything starts: no
  // private cluster is made for them, no tree, no server.
  ef::test::temp_dir dir;
  partitions.database.url.clear();
  partitions.database.data_dir = dir.path + "/pg";
  auto refused = [&](auto&& start) {
    try {
      start();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("started");
  };
  CHECK(refused([&] { ef::app::runtime services(partitions); }) == cli);
  CHECK_FALSE(std::filesystem::exists(dir.path + "/pg"));
  caf::actor_system_config caf_cfg;
  ef::configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  CHECK(refused([&] {
          ef::start(sys, partitions, {"postgresql://nowhere", "nowhere:9092"});
        }) == cli);
  CHECK(ef::running_trees() == 0);
  CHECK(refused([&] {
          ef::app::http_frontend front(sys, ef::eventforge_actor{}, partitions,
                                       nullptr, {});
        }) == cli);
}
