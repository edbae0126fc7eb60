// The Kafka group client against the real protocol (the in-process broker):
// what its repositioning calls do to what the application reads next.

#include "kafka/embedded_broker.hpp"
#include "kafka/group_consumer.hpp"
#include "kafka/outbox_producer.hpp"
#include "messages/tree_messages.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <vector>

using namespace ef;

namespace {

/// Polls until `done` or 20 s; every record read is kept.
template <class Pred>
bool poll_until(kafka::group_consumer& c, std::vector<partition_record>& seen,
                Pred done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    if (auto r = c.poll(50))
      seen.push_back(*r);
  }
  return true;
}

} // namespace

TEST_CASE("a_restart_of_the_fetch_continues_a_partition_resumed_by_a_seek_"
          "where_the_application_was_and_reads_nothing_twice") {
  // The parking path: a partition read to its end is paused, then resumed
  // with a seek to where it stopped. The seek makes librdkafka forget the
  // application's position until the next record; a restart of the fetch
  // (the watchdog's repair of another partition) must still continue there,
  // not at the committed offset, which lags.
  kafka::embedded_broker broker{1, {{"orders", 1}}};
  auto brokers = broker.bootstrap_servers();
  kafka::outbox_producer producer(brokers, "orders", 5000, "test-producer");
  for (int i = 0; i < 3; ++i)
    REQUIRE(producer.publish_raw("k", "v" + std::to_string(i), {}).persisted);

  std::optional<std::int64_t> end;
  bool lost = false;
  kafka::group_consumer::callbacks cbs;
  cbs.at_end = [&](std::int32_t, std::int64_t next) { end = next; };
  cbs.position_lost = [&](std::int32_t, std::int64_t) { lost = true; };
  kafka::group_consumer c(brokers, "g", "orders", 6000, 20, cbs);
  // A new group has no committed offset: the client stops and waits for
  // the owner, who starts it at the log start (as the group member does).
  std::vector<partition_record> seen;
  REQUIRE(poll_until(c, seen, [&] { return lost; }));
  c.restart_at({{0, -1}}, {});
  REQUIRE(poll_until(c, seen, [&] { return end == 3; }));
  REQUIRE(seen.size() == 3);
  REQUIRE_FALSE(c.commit({{0, 1}})); // the group lags what was read

  // Parked at its end, then resumed by a seek to that end.
  c.pause(0);
  end.reset();
  c.resume_at_once(0, 3);
  REQUIRE(poll_until(c, seen, [&] { return end == 3; }));
  CHECK(seen.size() == 3);

  // The fetch restarts (as for a repair of another partition); a new
  // record arrives. It is the next thing read, and nothing comes again.
  c.restart_at({}, {});
  REQUIRE(producer.publish_raw("k", "v3", {}).persisted);
  REQUIRE(poll_until(c, seen, [&] { return seen.size() >= 4; }));
  CHECK(seen[3].offset == 3);
  end.reset();
  REQUIRE(poll_until(c, seen, [&] { return end == 4; }));
  CHECK(seen.size() == 4);
}
