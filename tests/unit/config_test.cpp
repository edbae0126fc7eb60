#include "config/ini_parser.hpp"
#include "config/options.hpp"

#include <catch2/catch.hpp>

using namespace ef::config;

TEST_CASE("defaults_build_without_any_value") {
  auto r = build_settings({});
  REQUIRE(r.ok());
  CHECK(r.value.http.host == "127.0.0.1");
  CHECK(r.value.kafka.partitions == 6);
  CHECK(r.value.relay.shards == 4);
  CHECK(r.value.database.url.empty());
  CHECK(r.value.kafka.brokers.empty());
}

TEST_CASE("ini_values_are_typed_and_later_values_win") {
  auto ini = parse_ini("; comment\n[kafka]\nbrokers=\"a:1,b:2\"\npartitions=12"
                       "\n\n[relay]\nshards = 8 # trailing\n",
                       "test.ini");
  REQUIRE(ini.ok());
  auto values = ini.values;
  values.emplace_back("relay.shards", "2"); // the command line comes last
  auto r = build_settings(values);
  REQUIRE(r.ok());
  CHECK(r.value.kafka.brokers == "a:1,b:2");
  CHECK(r.value.kafka.partitions == 12);
  CHECK(r.value.relay.shards == 2);
}

TEST_CASE("unknown_config_key_is_rejected_by_name") {
  auto r = build_settings({{"kafka.partitons", "3"}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error == "unknown config key \"kafka.partitons\"");
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
                 bad{"consumer.enabled", "shipping", "unknown name"},
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

TEST_CASE("malformed_ini_reports_file_and_line") {
  CHECK(parse_ini("[kafka]\nbrokers=a:1\n", "f.ini").error ==
        "f.ini:2: kafka.brokers: strings must be double-quoted, got a:1");
  CHECK(parse_ini("port=1\n", "f.ini").error ==
        "f.ini:1: key \"port\" outside of any [section]");
  CHECK(parse_ini("[http\n", "f.ini").error ==
        "f.ini:1: malformed section header [http");
  CHECK(parse_ini("[http]\nport 80\n", "f.ini").error ==
        "f.ini:2: expected key=value, got port 80");
  CHECK(parse_ini("[http]\nhost=\"x\n", "f.ini").error ==
        "f.ini:2: http.host: unterminated string");
  CHECK_FALSE(read_ini_file("/nonexistent/eventforge.ini").ok());
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

#include "config/reference.hpp"

#include <fstream>
#include <sstream>

TEST_CASE("docs_config_md_matches_the_option_table") {
  std::ifstream f(EF_SOURCE_DIR "/docs/config.md");
  REQUIRE(f.good());
  std::stringstream text;
  text << f.rdbuf();
  INFO("regenerate with: build/eventforge config-reference > docs/config.md");
  CHECK(text.str() == ef::config::reference_markdown());
}

#include "config/ini_parser.hpp"

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
  auto ini = ef::config::read_ini_file(path);
  INFO(ini.error);
  REQUIRE(ini.ok());
  CHECK(ini.values.size() == ef::config::options().size());
  auto built = ef::config::build_settings(ini.values);
  INFO(built.error);
  REQUIRE(built.ok());
  ef::config::settings defaults;
  for (auto& o : ef::config::options()) {
    INFO(o.key);
    CHECK(o.render(built.value) == o.render(defaults));
  }
}
