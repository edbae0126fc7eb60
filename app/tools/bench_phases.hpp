#pragma once

// The phases of `eventforge bench` and what they share, private to
// app/tools: bench_runner.cpp runs them in order and assembles the report;
// each phase is in a file of its own (bench_baselines, bench_latency,
// bench_cost_phase, bench_backlog), the shared measuring in
// bench_measures.cpp and the printed table in bench_summary.cpp.

#include "app/tools/bench_runner.hpp"
#include "app/tools/pipeline_host.hpp"
#include "bench/e2e_latency.hpp"
#include "bench/floor.hpp"
#include "bench/http_load.hpp"
#include "bench/pgbench.hpp"
#include <eventforge/embedded/verifier.hpp>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace ef::app::bench_run {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

// -- measuring (bench_measures.cpp) ----------------------------------------

double since(clock::time_point t);
double ratio(double a, double b);

/// The body of HTTP order i; `who` keeps each phase's orders apart, so the
/// latency query picks exactly the orders of its phase.
std::string order_body(const std::string& who, long i);

json to_json(const bench::latency_summary& s);
json to_json(const bench::load_result& r);

/// Waits until the pipeline has published and applied everything and
/// committed every offset; false on timeout.
bool wait_drained(const config::settings& cfg, const endpoints& ep,
                  int timeout_s, const char* phase);

/// A load on the HTTP front at `url` ("http://host:port").
bench::load_spec load_at(const std::string& url);

/// `clients` keep-alive clients for `seconds`, at `rate` orders/s (0: as
/// fast as answered), their orders' customers named after `who`.
bench::load_result http_phase(const std::string& url, int clients, double rate,
                              int seconds, const std::string& who);

/// Waits until every consumer applied `orders` more orders than `applied0`
/// (read from the pipeline's own counters: the wait costs no query); false
/// on timeout.
bool await_applied(const telemetry& metrics, std::uint64_t applied0,
                   long orders, std::size_t consumers, int timeout_s);

// -- (e) and (a): pgbench baselines (bench_baselines.cpp) ------------------

struct baselines {
  bench::pgbench_result api, consumer_one, consumer_batch, relay;
  int consumer_clients = 0, relay_clients = 0, batch_events = 100;
  /// The floor at each cost rate (bench/floor.hpp), in plan.cost_rates order.
  std::vector<bench::floor_figures> floors;
};

/// What PostgreSQL does with the pipeline's own SQL under pgbench, and the
/// floor at each cost rate; run before the pipeline starts, so nothing
/// else competes for the cores.
baselines run_baselines(const config::settings& cfg, const bench_plan& plan,
                        const std::string& dsn);

// -- (g) lone orders, (b) throughput, (c) latency (bench_latency.cpp) ------

/// (g): orders one at a time at random gaps, right after start.
json lone_phase(const config::settings& cfg, const bench_plan& plan,
                const std::string& url, const std::string& dsn,
                const telemetry& metrics);

/// (b): closed-loop keep-alive clients, one phase per plan.clients entry.
json throughput_phases(const config::settings& cfg, const bench_plan& plan,
                       const endpoints& ep, const std::string& url);

/// (c): a fixed rate, latencies from the database's clocks.
struct latency_figures {
  double rate = 0;
  bench::e2e_latency e2e;
};
latency_figures latency_phase(const config::settings& cfg,
                              const bench_plan& plan, const endpoints& ep,
                              const std::string& url, double rate,
                              json& report);

// -- (f) the cost of an order (bench_cost_phase.cpp) -----------------------

/// What an order costs at the plan's fixed rates, and what the idle
/// pipeline costs, each against the floor at its rate.
json cost_phase(const config::settings& cfg, const bench_plan& plan,
                const endpoints& ep, const std::string& url,
                const telemetry& metrics,
                const std::vector<bench::floor_figures>& floors);

// -- (d) a backlog (bench_backlog.cpp) --------------------------------------

struct backlog_figures {
  double write_s = 0, relay_s = 0, consumers_s = 0, settle_s = 0;
  /// The relays alone (no consumer running) over the first rows of the
  /// backlog, from the first published row: their own pace.
  double alone_rows = 0, alone_s = 0;
  double peak_rss_mib = 0;
  std::vector<double> rss_mib; // every second
  bool drained = false;
};

/// Writes plan.backlog orders while the pipeline is stopped, lets the
/// relays alone publish the first of them, then drains the rest with the
/// whole pipeline.
backlog_figures drain_backlog(caf::actor_system& sys,
                              const config::settings& cfg,
                              const bench_plan& plan, const endpoints& ep,
                              pipeline& pipe,
                              std::shared_ptr<telemetry> registry,
                              std::shared_ptr<chaos> faults);

// -- the printed figures (bench_summary.cpp) -------------------------------

/// The figures side by side with their baselines, ratios and targets.
void print_summary(const json& report, const bench_plan& plan,
                   const baselines& base, const latency_figures& latency,
                   const backlog_figures& backlog, const verification& v,
                   clock::time_point started);

} // namespace ef::app::bench_run
