// `eventforge bench`: throughput, latency, a backlog drain and the cost of
// the pipeline against pgbench baselines of the same SQL, verified and
// reported (app/tools/bench_runner, docs/performance.md); or, with
// --compare, earlier reports side by side.

#include "app/command.hpp"
#include "app/tools/bench_runner.hpp"

namespace ef::app {
namespace {

class bench_cmd final : public command {
public:
  const char* name() const override { return "bench"; }
  const char* help() const override {
    return "measure throughput, latency and a backlog drain against pgbench "
           "baselines of the same SQL; verify; report";
  }

  // In the order --help lists them.
  void add_arguments(CLI::App& sub) override {
    sub
      .add_option("--seconds", plan_.seconds,
                  "length of each pgbench and HTTP phase")
      ->check(CLI::Range(1, 3600));
    sub
      .add_option("--clients", plan_.clients,
                  "keep-alive HTTP clients, one phase each (repeat or "
                  "comma-separate)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
    sub
      .add_option("--rate", plan_.rate,
                  "orders/s of the latency phase (default: half of the first "
                  "HTTP phase)")
      ->check(CLI::Range(0.0, 1e6));
    sub
      .add_option("--backlog", plan_.backlog,
                  "orders written while the pipeline is stopped, then drained "
                  "(0: skip)")
      ->check(CLI::Range(0L, 100000000L));
    sub
      .add_option("--seed-orders", plan_.seed_orders,
                  "orders in the scratch schema of the consumer and relay "
                  "baselines")
      ->check(CLI::Range(1000L, 100000000L));
    sub
      .add_option("--cost-rates", plan_.cost_rates,
                  "orders/s of the cost phase's fixed-rate runs (repeat or "
                  "comma-separate)")
      ->delimiter(',')
      ->check(CLI::Range(1.0, 1e6));
    sub
      .add_option("--cost-seconds", plan_.cost_seconds,
                  "seconds of each cost run (0: skip the cost phase)")
      ->check(CLI::Range(0, 3600));
    sub
      .add_option("--idle-seconds", plan_.idle_seconds,
                  "seconds the idle pipeline is measured in the cost phase")
      ->check(CLI::Range(1, 3600));
    sub
      .add_option("--lone-orders", plan_.lone_orders,
                  "orders sent one at a time at random gaps of 0.2-5 s right "
                  "after start, for the latency of a lone order (0: skip)")
      ->check(CLI::Range(0, 10000));
    sub
      .add_option("--timeout", plan_.timeout_s,
                  "seconds to wait for each drain")
      ->check(CLI::Range(1, 86400));
    sub.add_option("--report", plan_.report_path, "write every figure as JSON");
    sub
      .add_option("--compare", compare_,
                  "run nothing: print the main figures of these reports "
                  "(LABEL=FILE or FILE, repeat or comma-separate) side by "
                  "side")
      ->delimiter(',');
  }

  int run(configuration& c) override {
    if (!compare_.empty())
      return compare();
    config::settings cfg = c.settings;
    if (cfg.http.port == 8080)
      cfg.http.port = 0; // never collide with a running serve
    return run_bench(cfg, plan_, c.caf);
  }

private:
  /// Each report as LABEL=FILE, or FILE alone (then the file names the
  /// column).
  int compare() const {
    std::vector<std::string> labels, paths;
    for (auto& x : compare_) {
      auto eq = x.find('=');
      labels.push_back(eq == std::string::npos ? x : x.substr(0, eq));
      paths.push_back(eq == std::string::npos ? x : x.substr(eq + 1));
    }
    return compare_bench_reports(labels, paths);
  }

  bench_plan plan_;
  std::vector<std::string> compare_;
};

} // namespace

std::unique_ptr<command> bench_command() {
  return std::make_unique<bench_cmd>();
}

} // namespace ef::app
