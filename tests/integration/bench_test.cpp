// `eventforge bench` end to end, small: every phase runs, its figures reach
// the report, and the database afterwards holds exactly what the report
// says was written, each event applied once by each consumer.

#include "app/tools/bench_runner.hpp"
#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace ef;

TEST_CASE("bench_runs_every_phase_reports_its_figures_and_leaves_every_"
          "order_applied_once") {
  test::database db;
  test::temp_dir dir;
  auto cfg = test::test_settings();
  cfg.database.url = db.dsn();
  app::bench_plan plan;
  plan.seconds = 1;
  plan.clients = {4};
  plan.rate = 50;
  plan.backlog = 3000;
  plan.seed_orders = 2400;
  plan.cost_rates = {50};
  plan.cost_seconds = 1;
  plan.idle_seconds = 1;
  plan.lone_orders = 2;
  plan.stats_settle_s = 1; // the counters may lag: only their presence counts
  plan.timeout_s = 120;
  plan.report_path = dir.path + "/report.json";
  REQUIRE(app::run_bench(cfg, plan) == 0);

  nlohmann::json r;
  std::ifstream(plan.report_path) >> r;
  auto& base = r["baselines"];
  CHECK(base["api_order_tps"].get<double>() > 0);
  CHECK(base["consumer_one_event_tps"].get<double>() > 0);
  CHECK(base["consumer_batch_events_per_s"].get<double>() > 0);
  CHECK(base["relay_rows_per_s"].get<double>() > 0);
  auto& http = r["http"][0];
  CHECK(http["clients"] == 4);
  CHECK(http["answered_other"] == 0);
  CHECK(http["transport_errors"] == 0);
  auto http_orders = http["answered_2xx"].get<long>();
  CHECK(http_orders > 0);
  auto& lat = r["latency"];
  auto lat_orders = lat["http"]["answered_2xx"].get<long>();
  CHECK(lat_orders > 0);
  // Every latency order was measured, for each consumer, from commit
  // timestamps (the test cluster, like the embedded one, tracks them).
  CHECK(lat["clock"] == "commit timestamps");
  CHECK(lat["published"]["samples"] == lat_orders);
  for (auto& c : cfg.consumer.enabled)
    CHECK(lat["consumers"][c]["samples"] == lat_orders);
  // The cost phase: every order applied, figures from the kernel's and
  // PostgreSQL's counters (the test server runs on this machine).
  auto& cost = r["cost"]["runs"][0];
  REQUIRE(cost["applied"] == true);
  auto cost_orders = cost["orders"].get<long>();
  CHECK(cost_orders > 0);
  CHECK(cost["cpu_ms_per_order"]["pipeline"].get<double>() > 0);
  CHECK(cost["cpu_ms_per_order"]["postgres"].get<double>() > 0);
  CHECK(cost["transactions_per_order"].get<double>() > 0);
  CHECK(cost["rows_written_per_order"].get<double>() > 0);
  for (auto& c : cfg.consumer.enabled)
    CHECK(cost["e2e"]["consumers"][c]["samples"] == cost_orders);
  CHECK(r["cost"]["idle"]["threads"].get<long>() > 0);
  // The floor ran at the cost rate on the same server: PostgreSQL's CPU and
  // pgbench's, per order of its own, and the pipeline's cost over it.
  auto& floor = cost["floor"];
  CHECK(floor["orders"].get<long>() > 0);
  CHECK(floor["cpu_ms_per_order"]["postgres"].get<double>() > 0);
  CHECK(floor["cpu_ms_per_order"]["client"].get<double>() > 0);
  // API, claim, mark, and one per consumer; pgbench's BEGIN/COMMIT pairs
  // are what pg_stat_database counts.
  CHECK(floor["transactions_per_order"].get<double>() >= 3);
  CHECK(floor["total_over_floor"].get<double>() > 0);
  CHECK(floor["postgres_over_floor"].get<double>() > 0);
  // The lone orders: each measured from the database's clocks.
  auto& lone = r["lone"];
  CHECK(lone["orders"] == plan.lone_orders);
  CHECK(lone["measured"] == plan.lone_orders);
  CHECK(lone["first_ms"].get<double>() > 0);
  CHECK(lone["max_ms"].get<double>() >= lone["p50_ms"].get<double>());
  auto& backlog = r["backlog"];
  CHECK(backlog["drained"] == true);
  CHECK(backlog["effects_per_s"].get<double>() > 0);
  CHECK(backlog["peak_rss_mib"].get<double>() > 0);
  CHECK(r["verifier"]["ok"] == true);
  CHECK(r["verifier"]["lost"] == 0);
  CHECK(r["verifier"]["doubled"] == 0);

  // Durable state: the orders the report counts, nothing from the pgbench
  // baselines (their scratch schema is gone), each event applied once.
  auto orders =
    http_orders + lat_orders + cost_orders + plan.backlog + plan.lone_orders;
  CHECK(db.scalar<long>("SELECT count(*) FROM orders") == orders);
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox") == orders);
  CHECK(db.scalar<long>("SELECT count(*) FROM outbox WHERE sent_at IS NULL") ==
        0);
  auto consumers = static_cast<long>(cfg.consumer.enabled.size());
  CHECK(db.scalar<long>("SELECT count(*) FROM processed_events") ==
        consumers * orders);
  CHECK(db.scalar<long>("SELECT count(*) FROM (SELECT consumer, event_id "
                        "FROM business_effects GROUP BY 1, 2 "
                        "HAVING count(*) > 1) d") == 0);
  CHECK(db.scalar<long>("SELECT count(*) FROM business_effects") ==
        consumers * orders);
  CHECK(db.scalar<long>("SELECT count(*) FROM pg_namespace WHERE nspname = "
                        "'ef_bench_sql'") == 0);

  // --compare reads reports, and refuses a file that is not one.
  CHECK(app::compare_bench_reports({"a", "b"},
                                   {plan.report_path, plan.report_path}) == 0);
  auto not_a_report = dir.path + "/not-a-report.json";
  std::ofstream(not_a_report) << "[1, 2";
  CHECK(app::compare_bench_reports({"a", "b"},
                                   {plan.report_path, not_a_report}) == 2);
  CHECK(app::compare_bench_reports({"x"}, {dir.path + "/missing.json"}) == 2);
}
