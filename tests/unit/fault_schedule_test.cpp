// A chaos run's Kafka faults come from its seed: the same arguments give
// the same faults at the same points, so a failing run can be replayed.

#include "app/tools/fault_schedule.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace ef::app;

TEST_CASE("kafka_faults_are_drawn_from_the_seed_in_turn_at_even_points") {
  fault_target t{3, "orders", 6, {"eventforge.billing", "eventforge.dlq"}};
  std::vector<std::string> kinds{"all"};
  REQUIRE_FALSE(expand_fault_kinds(kinds, 3));
  CHECK(kinds == broker_fault_kinds());
  auto a = plan_broker_faults(7, kinds, 10, 1100, t);
  auto b = plan_broker_faults(7, kinds, 10, 1100, t);
  auto c = plan_broker_faults(8, kinds, 10, 1100, t);
  REQUIRE(a.size() == 10);
  std::string ta, tb, tc;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].at_order == static_cast<long>(100 * (i + 1)));
    CHECK(a[i].kind == kinds[i % kinds.size()]);
    ta += to_string(a[i].fault) + ";";
    tb += to_string(b[i].fault) + ";";
    tc += to_string(c[i].fault) + ";";
    // Every fault is one the cluster can take: its words parse back.
    auto parsed = ef::kafka::parse_fault(to_string(a[i].fault));
    INFO(to_string(a[i].fault));
    CHECK(std::holds_alternative<ef::kafka::broker_fault>(parsed));
    auto& f = a[i].fault;
    CHECK((f.broker >= 1 && f.broker <= 3 ||
           f.what == ef::kafka::broker_fault::kind::errors));
    if (a[i].kind == "down" || a[i].kind == "rtt")
      CHECK(a[i].undo.has_value());
  }
  CHECK(ta == tb);
  CHECK(ta != tc);
}

TEST_CASE("kafka_fault_kinds_are_checked_naming_the_wrong_one") {
  std::vector<std::string> bad{"leader", "meteor"};
  auto err = expand_fault_kinds(bad, 3);
  REQUIRE(err);
  CHECK(err->find("\"meteor\"") != std::string::npos);
  std::vector<std::string> one_broker{"coordinator"};
  err = expand_fault_kinds(one_broker, 1);
  REQUIRE(err);
  CHECK(err->find("kafka.embedded-brokers >= 2") != std::string::npos);
  std::vector<std::string> fine{"rtt", "errors"};
  CHECK_FALSE(expand_fault_kinds(fine, 1));
}
