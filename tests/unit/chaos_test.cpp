#include "actors/chaos.hpp"
#include "messages/ids.hpp"

#include <catch2/catch.hpp>

#include <utility>
#include <vector>

using namespace ef;

namespace {

/// Visits every point for every event `visits` times, recording decisions.
std::vector<bool> run(std::uint64_t seed, const std::vector<std::string>& ids,
                      int visits) {
  config::settings::chaos_section cfg;
  cfg.points = {"consumer.before_db_commit", "relay.after_ack_before_mark"};
  cfg.rate = 0.3;
  cfg.seed = seed;
  cfg.max_crashes_per_event = 2;
  chaos c(cfg, std::make_shared<telemetry>());
  std::vector<bool> out;
  for (int v = 0; v < visits; ++v)
    for (auto& id : ids)
      for (auto p : {crash_point::consumer_before_db_commit,
                     crash_point::relay_after_ack_before_mark}) {
        bool crashed = false;
        try {
          c.check(p, id);
        } catch (const injected_crash& e) {
          crashed = true;
          CHECK(e.point == p);
        }
        out.push_back(crashed);
      }
  return out;
}

} // namespace

TEST_CASE("same_seed_replays_the_same_crash_decisions") {
  std::vector<std::string> ids;
  for (int i = 0; i < 500; ++i)
    ids.push_back(new_uuid_v7());
  auto a = run(7, ids, 4);
  auto b = run(7, ids, 4);
  auto other = run(8, ids, 4);
  CHECK(a == b);
  CHECK(a != other);
  auto crashes = std::count(a.begin(), a.end(), true);
  // Rate 0.3 over 4000 visits, capped at 2 per event and point.
  CHECK(crashes > 300);
  CHECK(crashes <= 2 * 2 * 500);
}

TEST_CASE("a_point_crashes_one_event_at_most_the_configured_times") {
  config::settings::chaos_section cfg;
  cfg.points = {"consumer.after_db_before_offset"};
  cfg.rate = 1.0;
  cfg.max_crashes_per_event = 3;
  chaos c(cfg, nullptr);
  int crashes = 0;
  for (int i = 0; i < 10; ++i) {
    try {
      c.check(crash_point::consumer_after_db_before_offset, "e1");
    } catch (const injected_crash&) {
      ++crashes;
    }
  }
  CHECK(crashes == 3);
  // Points that are not enabled never crash.
  CHECK_NOTHROW(c.check(crash_point::consumer_before_db_commit, "e1"));
}

TEST_CASE("chaos_is_off_without_points_or_rate") {
  config::settings::chaos_section cfg;
  cfg.rate = 1.0;
  chaos none(cfg, nullptr);
  CHECK_FALSE(none.enabled(crash_point::api_after_commit_before_reply));
  cfg.points = {"api.after_commit_before_reply"};
  cfg.rate = 0;
  chaos zero(cfg, nullptr);
  CHECK_FALSE(zero.enabled(crash_point::api_after_commit_before_reply));
}

TEST_CASE("crashes_per_event_do_not_depend_on_visit_order_or_count") {
  // A relay visits a row once per batch it is in; batches differ between
  // runs. The crashes a seed injects must not.
  config::settings::chaos_section cfg;
  cfg.points = {"relay.after_publish_before_ack"};
  cfg.rate = 0.4;
  cfg.seed = 11;
  cfg.max_crashes_per_event = 3;
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i)
    keys.push_back("trace-" + std::to_string(i) + "/OrderCreated");
  auto visit = [&](chaos& c, const std::string& k) {
    try {
      c.check(crash_point::relay_after_publish_before_ack, k);
    } catch (const injected_crash&) {
    }
  };
  chaos forward(cfg, nullptr), backward(cfg, nullptr);
  for (int round = 0; round < 6; ++round)
    for (auto& k : keys)
      visit(forward, k);
  for (int round = 0; round < 9; ++round)
    for (auto k = keys.rbegin(); k != keys.rend(); ++k)
      visit(backward, *k);
  CHECK_FALSE(forward.injected().empty());
  CHECK(forward.injected() == backward.injected());
}

TEST_CASE("chaos_keys_name_the_logical_event_when_a_trace_is_given") {
  auto tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  CHECK(chaos_key(tp, "OrderCreated", "e1") ==
        "0af7651916cd43dd8448eb211c80319c/OrderCreated");
  CHECK(chaos_key(tp, "OrderCancelled", "e2") ==
        "0af7651916cd43dd8448eb211c80319c/OrderCancelled");
  CHECK(chaos_key("", "OrderCreated", "e1") == "e1");
}

namespace {

/// Visits `p` with `key`; true if it crashed.
bool crashes(chaos& c, crash_point p, const std::string& key) {
  try {
    c.check(p, key, {"order", "event", ""});
  } catch (const injected_crash& e) {
    CHECK(e.point == p);
    return true;
  }
  return false;
}

} // namespace

TEST_CASE("an_armed_crash_fires_once_for_its_trace_and_consumer_only") {
  config::settings::chaos_section off; // no configured points: chaos is off
  chaos c(off, std::make_shared<telemetry>());
  std::vector<crash_point> seen;
  c.on_crash([&](crash_point p, const crash_site& site) {
    seen.push_back(p);
    CHECK(site.order_id == "order");
  });
  auto trace = std::string(32, 'a');
  auto other = std::string(32, 'b');
  auto p = crash_point::consumer_after_db_before_offset;
  CHECK_FALSE(c.enabled(p));
  c.arm(p, trace, "fulfillment");
  CHECK(c.enabled(p));
  // Not another trace, not another consumer, not another point.
  CHECK_FALSE(crashes(c, p, "fulfillment/" + other + "/OrderCreated"));
  CHECK_FALSE(crashes(c, p, "billing/" + trace + "/OrderCreated"));
  CHECK_FALSE(crashes(c, crash_point::consumer_before_db_commit,
                      "fulfillment/" + trace + "/OrderCreated"));
  // Its own: once, then the point is off again.
  CHECK(crashes(c, p, "fulfillment/" + trace + "/OrderCreated"));
  CHECK_FALSE(crashes(c, p, "fulfillment/" + trace + "/OrderCreated"));
  CHECK_FALSE(c.enabled(p));
  CHECK(seen == std::vector<crash_point>{p});
  // Armed crashes are not seeded decisions: the chaos run's list is empty.
  CHECK(c.injected().empty());
}

TEST_CASE("a_crash_armed_on_several_nodes_fires_only_where_its_claim_"
          "succeeds_and_a_dropped_crash_keeps_the_poison") {
  config::settings::chaos_section off;
  // Two nodes' crash points, one claim between them (the database row).
  chaos here(off, std::make_shared<telemetry>());
  chaos there(off, std::make_shared<telemetry>());
  bool claimed = false;
  auto claim = [&claimed] { return !std::exchange(claimed, true); };
  auto trace = std::string(32, 'c');
  auto p = crash_point::consumer_after_db_before_offset;
  auto key = "fulfillment/" + trace + "/OrderCreated";
  REQUIRE(here.arm_claimed(p, trace, "fulfillment", claim));
  REQUIRE(there.arm_claimed(p, trace, "fulfillment", claim));
  CHECK(crashes(there, p, key));      // its claim succeeds: it fires
  CHECK_FALSE(crashes(here, p, key)); // claimed already: no second crash
  CHECK_FALSE(here.enabled(p));       // and it is used up here too
  // A crash another node fired goes; the run's poison stays until it ends.
  REQUIRE(here.arm(p, trace, "fulfillment"));
  REQUIRE(here.poison(trace, "fulfillment"));
  here.drop_crashes(trace);
  CHECK_FALSE(here.enabled(p));
  CHECK(here.poisoned(key));
  CHECK(here.armed_for(trace));
  here.disarm(trace);
  CHECK_FALSE(here.armed_for(trace));
}

TEST_CASE("a_poisoned_trace_matches_only_its_consumer_until_forgotten") {
  config::settings::chaos_section off;
  chaos c(off, std::make_shared<telemetry>());
  auto trace = std::string(32, 'c');
  CHECK_FALSE(c.poisoned("fulfillment/" + trace + "/OrderCreated"));
  c.poison(trace, "fulfillment");
  CHECK(c.poisoned("fulfillment/" + trace + "/OrderCreated"));
  CHECK(c.poisoned("fulfillment/" + trace + "/OrderCancelled"));
  CHECK_FALSE(c.poisoned("billing/" + trace + "/OrderCreated"));
  CHECK_FALSE(c.poisoned("fulfillment/" + std::string(32, 'd') + "/x"));
  // Bounded: past max_armed poisons, a new one is refused (the old ones are
  // removed by whoever set them).
  for (size_t i = 1; i < chaos::max_armed; ++i)
    CHECK(
      c.poison(std::to_string(1000000 + i) + std::string(25, 'e'), "billing"));
  CHECK_FALSE(c.poison(std::string(32, 'f'), "billing"));
  CHECK(c.armed_for(trace));
  // Disarmed: forgotten, and room again.
  c.disarm(trace);
  CHECK_FALSE(c.poisoned("fulfillment/" + trace + "/OrderCreated"));
  CHECK_FALSE(c.armed_for(trace));
  CHECK(c.poison(std::string(32, 'f'), "billing"));
}

TEST_CASE("armed_crashes_are_bounded_and_removed_by_disarm") {
  config::settings::chaos_section off;
  chaos c(off, std::make_shared<telemetry>());
  auto p = crash_point::relay_after_ack_before_mark;
  for (size_t i = 0; i < chaos::max_armed; ++i)
    CHECK(c.arm(p, std::to_string(1000000 + i) + std::string(25, 'a')));
  CHECK_FALSE(c.arm(p, std::string(32, 'b')));
  CHECK(c.enabled(p));
  for (size_t i = 0; i < chaos::max_armed; ++i)
    c.disarm(std::to_string(1000000 + i) + std::string(25, 'a'));
  // Nothing armed any more: the point is off again, checks cost one load.
  CHECK_FALSE(c.enabled(p));
  CHECK(c.arm(p, std::string(32, 'b')));
}
