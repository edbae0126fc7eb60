// The process's one producer against the real protocol (the in-process
// broker): several publishers at once, each waiting for its own reports.

#include "kafka/embedded_broker.hpp"
#include "kafka/outbox_producer.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace ef;

namespace {

order_event event_of(const std::string& order, int i) {
  order_event ev;
  ev.event_id = "00000000-0000-7000-8000-" +
                std::string(12 - std::to_string(i).size(), '0') +
                std::to_string(i);
  ev.order_id = order;
  ev.event_type = "OrderCreated";
  ev.payload = R"({"n":)" + std::to_string(i) + "}";
  ev.occurred_at = "2026-12-07T00:00:00Z";
  return ev;
}

} // namespace

TEST_CASE("publishers_sharing_one_producer_each_get_exactly_their_own_"
          "reports_also_after_one_abandoned_its_batch") {
  kafka::embedded_broker broker{1, {{"orders", 4}, {"other", 1}}};
  kafka::producer_slot slot(broker.bootstrap_servers(), "orders", 10000,
                            "test-shared");
  auto producer = slot.get();
  // Held: everyone gets the same one.
  CHECK(slot.get() == producer);

  // Four publishers, each with its own order key (one partition each) and
  // batches of 5, 50 times: every report is its own record's, in order.
  constexpr int publishers = 4, rounds = 50, batch = 5;
  std::vector<std::vector<kafka::delivery>> seen(publishers);
  std::vector<std::thread> threads;
  for (int t = 0; t < publishers; ++t)
    threads.emplace_back([&, t] {
      auto order = "order-" + std::to_string(t);
      for (int r = 0; r < rounds; ++r) {
        std::vector<order_event> evs;
        for (int i = 0; i < batch; ++i)
          evs.push_back(event_of(order, t * 10000 + r * batch + i));
        auto reports = slot.get()->publish(evs, {});
        seen[t].insert(seen[t].end(), reports.begin(), reports.end());
      }
    });
  for (auto& t : threads)
    t.join();
  for (int t = 0; t < publishers; ++t) {
    REQUIRE(seen[t].size() == rounds * batch);
    for (size_t i = 0; i < seen[t].size(); ++i) {
      INFO("publisher " << t << " record " << i << ": " << seen[t][i].error);
      REQUIRE(seen[t][i].persisted);
      // One key, one partition; offsets strictly rising in publish order.
      CHECK(seen[t][i].partition == seen[t][0].partition);
      if (i > 0)
        CHECK(seen[t][i].offset > seen[t][i - 1].offset);
    }
  }
  // Same-partition publishers interleave: no offset is reported twice.
  std::map<std::pair<std::int32_t, std::int64_t>, int> offsets;
  for (auto& s : seen)
    for (auto& d : s)
      CHECK(++offsets[{d.partition, d.offset}] == 1);

  // A caller that gives up after sending (a relay crashing there) leaves
  // its records to land or not; the next caller's reports are its own.
  CHECK_THROWS_AS(
    producer->publish({event_of("abandoned", 1), event_of("abandoned", 2)},
                      [] { throw std::runtime_error("crash after send"); }),
    std::runtime_error);
  auto after = producer->publish({event_of("after", 3)}, {});
  REQUIRE(after.size() == 1);
  CHECK(after[0].persisted);
  // Another topic through the same producer.
  auto other = producer->publish_raw_to("other", "k", "v", {{"h", "1"}});
  CHECK(other.persisted);
  CHECK(other.partition == 0);

  // Released by everyone: the next one asking gets a new producer, which
  // publishes.
  producer.reset();
  auto again = slot.get();
  CHECK_FALSE(again->failed());
  CHECK(again->publish_raw("k", "v", {}).persisted);
}
