// A real cluster's settings (TLS, SASL, ...) reach EventForge's Kafka
// clients as librdkafka properties: from a file or the environment, checked
// at start by name, never shown.

#include "kafka/connection.hpp"
#include "tests/support/harness.hpp"
#include <eventforge/config/options.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

using ef::config::build_settings;
using ef::kafka::check_properties;

TEST_CASE("kafka_properties_come_from_a_file_then_the_environment") {
  ef::test::temp_dir dir;
  auto file = dir.path + "/client.properties";
  std::ofstream(file) << "# a SASL/SCRAM cluster over TLS\n"
                         "security.protocol=SASL_SSL\n"
                         "  sasl.mechanisms = SCRAM-SHA-512  \n"
                         "\n"
                         "sasl.username=orders\n"
                         "sasl.password=from-the-file\n";
  ::setenv("EVENTFORGE_KAFKA_PROPERTY_SASL_PASSWORD", "from-the-env", 1);
  auto r = build_settings({{"kafka.properties-file", file}});
  ::unsetenv("EVENTFORGE_KAFKA_PROPERTY_SASL_PASSWORD");
  INFO(r.error);
  REQUIRE(r.ok());
  auto& p = r.value.kafka.properties;
  CHECK(p.size() == 4);
  CHECK(p.at("security.protocol") == "SASL_SSL");
  CHECK(p.at("sasl.mechanisms") == "SCRAM-SHA-512");
  CHECK(p.at("sasl.username") == "orders");
  // The environment wins: a secret can stay out of every file.
  CHECK(p.at("sasl.password") == "from-the-env");
  // Without a file, the environment alone.
  ::setenv("EVENTFORGE_KAFKA_PROPERTY_SSL_CA_LOCATION", "/etc/ca.pem", 1);
  auto env_only = build_settings({});
  ::unsetenv("EVENTFORGE_KAFKA_PROPERTY_SSL_CA_LOCATION");
  REQUIRE(env_only.ok());
  CHECK(env_only.value.kafka.properties ==
        std::map<std::string, std::string>{{"ssl.ca.location", "/etc/ca.pem"}});
}

TEST_CASE("a_bad_kafka_properties_file_stops_start_up_naming_file_and_line_"
          "and_never_its_values") {
  ef::test::temp_dir dir;
  auto file = dir.path + "/client.properties";
  std::ofstream(file) << "security.protocol=SSL\nsasl.password never-shown\n";
  auto r = build_settings({{"kafka.properties-file", file}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error == "kafka.properties-file " + file + ":2: expected key=value");
  std::ofstream(file) << "=never-shown\n";
  auto empty_key = build_settings({{"kafka.properties-file", file}});
  REQUIRE_FALSE(empty_key.ok());
  CHECK(empty_key.error.find(":1: the key before '=' is empty") !=
        std::string::npos);
  CHECK(empty_key.error.find("never-shown") == std::string::npos);
  auto missing = build_settings({{"kafka.properties-file", file + ".gone"}});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error.rfind(
          "cannot read kafka.properties-file " + file + ".gone: ", 0) == 0);
}

TEST_CASE("kafka_properties_are_checked_by_librdkafka_naming_the_key") {
  CHECK_FALSE(check_properties({}));
  CHECK_FALSE(check_properties({{"security.protocol", "SASL_PLAINTEXT"},
                                {"sasl.mechanisms", "SCRAM-SHA-256"},
                                {"sasl.username", "orders"},
                                {"sasl.password", "s3cret"},
                                {"debug", "conf"}}));
  auto bad = check_properties({{"security.protocol", "bogus"}});
  REQUIRE(bad);
  CHECK(bad->rfind("kafka property security.protocol: ", 0) == 0);
  CHECK(bad->find("bogus") != std::string::npos);
  auto unknown = check_properties({{"sasl.mechanism.typo", "PLAIN"}});
  REQUIRE(unknown);
  CHECK(unknown->rfind("kafka property sasl.mechanism.typo: ", 0) == 0);
  // The nearest property librdkafka knows.
  auto typo = check_properties({{"socket.timeout.sm", "1000"}});
  REQUIRE(typo);
  CHECK(typo->find("(did you mean \"socket.timeout.ms\"?)") !=
        std::string::npos);
  // A CA file that is not there, named with its path and the reason
  // (librdkafka says only "system lib"), before any client is made.
  auto ca = check_properties(
    {{"security.protocol", "SSL"}, {"ssl.ca.location", "/nonexistent/ca.pem"}});
  REQUIRE(ca);
  CHECK(*ca == "kafka property ssl.ca.location: cannot read "
               "/nonexistent/ca.pem: No such file or directory");
}

TEST_CASE("kafka_properties_that_eventforge_sets_itself_are_refused_by_name") {
  for (auto key :
       {"enable.auto.commit", "enable.auto.offset.store", "enable.idempotence",
        "acks", "auto.offset.reset", "group.id"}) {
    auto err = check_properties({{key, "true"}});
    REQUIRE(err);
    CHECK(err->rfind(std::string("kafka property ") + key + " may not be set",
                     0) == 0);
  }
  auto brokers = check_properties({{"bootstrap.servers", "b:9092"}});
  REQUIRE(brokers);
  CHECK(brokers->find("set kafka.brokers instead") != std::string::npos);
}

TEST_CASE("a_secret_property_s_value_is_never_in_an_error") {
  // A value librdkafka refuses is quoted in its error, except a secret's.
  auto err = check_properties({{"ssl.key.password", "never-shown"},
                               {"ssl.key.location", "/nonexistent/key.pem"},
                               {"security.protocol", "SSL"}});
  REQUIRE(err);
  CHECK(err->find("never-shown") == std::string::npos);
  CHECK(ef::kafka::is_secret_property("sasl.password"));
  CHECK(ef::kafka::is_secret_property("sasl.oauthbearer.client.secret"));
  CHECK(ef::kafka::is_secret_property("ssl.key.pem"));
  CHECK_FALSE(ef::kafka::is_secret_property("sasl.username"));
}
