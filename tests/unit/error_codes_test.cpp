// EventForge's error codes travel as caf::error values (CAF 0.17's
// CAF_ERROR_CODE_ENUM: one enum per subsystem, none = 0) and an actor
// system renders them by the categories ef::configure_actor_system()
// registers. Each value must have a name of its own, and the rendering must
// use it: a log line or an HTTP answer that says "error code 3" helps nobody.
// (A value added without a case in its to_string() fails to compile:
// -Wswitch with -Werror.)

#include "actors/chaos.hpp"
#include "actors/crash_log.hpp"
#include "kafka/errors.hpp"
#include "persistence/db_error.hpp"
#include <eventforge/actors/eventforge.hpp>
#include <eventforge/messages/api_error.hpp>

#include <catch2/catch.hpp>

#include <librdkafka/rdkafkacpp.h>

#include <caf/all.hpp>

#include <set>
#include <string>

namespace {

/// Every value from none to `last`: its name is its own, none is no error,
/// and the others render as "<category>: <name>...".
template <class Enum>
void check_codes(caf::actor_system& sys, Enum last,
                 const std::string& category) {
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    auto code = static_cast<Enum>(i);
    std::string name = to_string(code);
    INFO(category << " code " << i << " is called " << name);
    CHECK(name != "unknown");
    CHECK(names.insert(name).second);
    caf::error err = caf::make_error(code);
    if (i == 0) {
      CHECK_FALSE(err); // none: a caf::error with code 0 is no error
      continue;
    }
    CHECK(caf::to_string(err.category()) == category);
    CHECK(sys.render(err).rfind(category + ": ", 0) == 0);
    CHECK(sys.render(err).find(name) != std::string::npos);
  }
}

} // namespace

TEST_CASE("every_error_code_has_a_name_of_its_own_and_renders_by_it") {
  caf::actor_system_config cfg;
  ef::configure_actor_system(cfg);
  caf::actor_system sys{cfg};
  check_codes(sys, ef::api_errc::outcome_unknown, "ef_api");
  check_codes(sys, ef::persistence::db_errc::permanent, "ef_db");
  check_codes(sys, ef::chaos_errc::injected_crash, "ef_chaos");
  check_codes(sys, ef::kafka::kafka_errc::fatal, "ef_kafka");
  // The context travels with the code.
  CHECK(sys.render(ef::make_api_error(ef::api_errc::not_found, "no such order",
                                      "order_id")) ==
        "ef_api: not_found (order_id: no such order)");
  for (int p = 0; p < ef::crash_point_count; ++p) {
    auto point = static_cast<ef::crash_point>(p);
    CHECK(sys.render(caf::make_error(ef::chaos_errc::injected_crash,
                                     std::string(to_string(point)))) ==
          std::string("ef_chaos: injected_crash at ") + to_string(point));
  }
  CHECK(ef::reason_class(caf::make_error(ef::chaos_errc::injected_crash,
                                         std::string("x"))) == "injected");
  CHECK(ef::reason_class(caf::make_error(
          ef::persistence::db_errc::unavailable)) == "db_unavailable");
}

TEST_CASE("librdkafka_s_codes_are_classified_by_what_their_caller_can_do") {
  using ef::kafka::kafka_errc;
  auto code_of = [](RdKafka::ErrorCode rc) {
    return static_cast<kafka_errc>(ef::kafka::kafka_error(rc).code());
  };
  CHECK_FALSE(ef::kafka::kafka_error(RdKafka::ERR_NO_ERROR));
  CHECK(code_of(RdKafka::ERR__TRANSPORT) == kafka_errc::unavailable);
  CHECK(code_of(RdKafka::ERR__TIMED_OUT) == kafka_errc::unavailable);
  CHECK(code_of(RdKafka::ERR_NOT_LEADER_FOR_PARTITION) ==
        kafka_errc::unavailable);
  CHECK(code_of(RdKafka::ERR_REBALANCE_IN_PROGRESS) == kafka_errc::rebalancing);
  CHECK(code_of(RdKafka::ERR_ILLEGAL_GENERATION) == kafka_errc::rebalancing);
  CHECK(code_of(RdKafka::ERR_NOT_COORDINATOR) == kafka_errc::rebalancing);
  CHECK(code_of(RdKafka::ERR_TOPIC_AUTHORIZATION_FAILED) ==
        kafka_errc::refused);
  CHECK(code_of(RdKafka::ERR_OFFSET_OUT_OF_RANGE) == kafka_errc::refused);
  CHECK(code_of(RdKafka::ERR__FATAL) == kafka_errc::fatal);
  // The broker's words travel with the class.
  CHECK(ef::kafka::describe(
          ef::kafka::kafka_error(RdKafka::ERR_REBALANCE_IN_PROGRESS)) ==
        "rebalancing: " + RdKafka::err2str(RdKafka::ERR_REBALANCE_IN_PROGRESS));
}
