// A relay shard's partitions do not wait for each other (issue 42.4): on the
// 3-broker in-process cluster, partition 0 alone is led by a broker that
// answers every request after 3 s, and one relay shard publishes orders
// bound for every partition. The rows of the other partitions are marked as
// soon as their leaders acknowledge them; before, a batch holding one row of
// partition 0 held them all for the 3 s. Figures: the rows' created-to-sent
// time per partition, from the outbox itself.

#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace ef;
using namespace std::chrono_literals;

TEST_CASE("a_partition_whose_leader_stalls_delays_only_its_own_rows_not_the_"
          "other_partitions_of_the_relay_shard") {
  test::database db;
  kafka::embedded_broker broker(3, {{"orders", 6}, {"orders.dlq", 6}});
  auto cfg = test::test_settings();
  cfg.kafka.partitions = 6;
  cfg.relay.shards = 1; // every row through one relay
  auto fault = [&](const std::string& command) {
    auto answer = broker.run_command(command);
    INFO(answer);
    REQUIRE(answer.rfind("fault ok", 0) == 0);
  };
  // Broker 3 leads partition 0 and nothing else; the groups' coordinators
  // live elsewhere, so only partition 0's records meet its slowness.
  fault("leader orders 0 3");
  for (int p = 1; p < 6; ++p)
    fault("leader orders " + std::to_string(p) + " " +
          std::to_string(1 + p % 2));
  for (auto group : {"eventforge.billing", "eventforge.shipping"})
    fault(std::string("coordinator ") + group + " 1");
  test::tree t(cfg, {db.dsn(), broker.bootstrap_servers()});
  // Warm: every partition's leader known to the relay's producer.
  for (int i = 0; i < 12; ++i)
    REQUIRE(test::post_json(t.url(), "/orders",
                            test::order_body("w" + std::to_string(i), 1, 100))
              .first == 201);
  REQUIRE(test::wait_until([&] {
    return db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at "
                           "IS NULL") == 0;
  }));
  auto warm = db.scalar<long>("SELECT max(seq) FROM outbox");
  fault("rtt 3 3000");
  for (int i = 0; i < 40; ++i)
    REQUIRE(test::post_json(t.url(), "/orders",
                            test::order_body("s" + std::to_string(i), 1, 100))
              .first == 201);
  REQUIRE(test::wait_until(
    [&] {
      return db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at "
                             "IS NULL") == 0;
    },
    60s));
  fault("rtt 3 0");
  auto since = " FROM outbox WHERE seq > " + std::to_string(warm);
  auto delay = "extract(epoch FROM sent_at - created_at)";
  auto stalled_min =
    db.scalar<double>("SELECT min(" + std::string(delay) + ")" + since +
                      " AND kafka_partition = 0");
  auto others_max = db.scalar<double>("SELECT max(" + std::string(delay) + ")" +
                                      since + " AND kafka_partition <> 0");
  auto others_p50 = db.scalar<double>(
    "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY " + std::string(delay) +
    ")" + since + " AND kafka_partition <> 0");
  auto counts = db.scalar<std::string>(
    "SELECT string_agg(kafka_partition || ':' || n, ' ' ORDER BY "
    "kafka_partition) FROM (SELECT kafka_partition, count(*) AS n" +
    since + " GROUP BY 1) x");
  WARN("rows per partition " << counts << "; partition 0 waited at least "
                             << stalled_min << " s; the others at most "
                             << others_max << " s (p50 " << others_p50
                             << " s)");
  // Both kinds were published, and partition 0's rows met the stall...
  REQUIRE(db.scalar<long>("SELECT count(*)" + since +
                          " AND kafka_partition = 0") > 0);
  REQUIRE(db.scalar<long>("SELECT count(*)" + since +
                          " AND kafka_partition <> 0") > 0);
  CHECK(stalled_min >= 2.0);
  // ... which none of the other partitions' rows waited for.
  CHECK(others_max < stalled_min / 2);
  // Nothing lost or doubled on the way.
  REQUIRE(test::wait_until(
    [&] { return test::quiescent(db, cfg, broker.bootstrap_servers()); }, 60s));
}
