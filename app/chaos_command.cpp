// `eventforge chaos`: the whole system under injected crashes (and, if
// asked, broker faults, broker replacements and a backlog), then verified
// and reported (app/tools/chaos_runner, docs/chaos.md).

#include "app/command.hpp"
#include "app/tools/chaos_runner.hpp"
#include "config/crash_points.hpp"

#include <optional>

namespace ef::app {
namespace {

class chaos_cmd final : public command {
public:
  const char* name() const override { return "chaos"; }
  const char* help() const override {
    return "run the whole system under injected crashes, verify, report";
  }

  // In the order --help lists them.
  void add_arguments(CLI::App& sub) override {
    sub.add_option("--orders", plan_.orders, "orders to place over HTTP")
      ->check(CLI::Range(0, 10000000));
    sub
      .add_option("--broker-restarts", plan_.broker_restarts,
                  "replace the in-process broker by an empty one this many "
                  "times while the orders stream in")
      ->check(CLI::Range(0, 100));
    sub
      .add_option("--backlog", plan_.backlog,
                  "orders written straight into the outbox before the run, "
                  "as if piled up while the pipeline was stopped")
      ->check(CLI::Range(0L, 100000000L));
    sub
      .add_option("--broker-faults", plan_.broker_faults,
                  "Kafka faults to inject in turn, drawn from the seed: "
                  "leader, down, rtt, errors, coordinator, or all "
                  "(comma-separated; in-process broker, "
                  "--kafka.embedded-brokers=3 as a real cluster)")
      ->delimiter(',');
    sub
      .add_option("--broker-fault-count", plan_.broker_fault_count,
                  "how many Kafka faults, evenly spaced over the orders")
      ->check(CLI::Range(1, 100000));
    sub.add_flag("--backlog-past-retention", plan_.backlog_past_retention,
                 "publish the backlog while the consumers are down, so the "
                 "broker trims it before they read it");
    sub.add_option("--concurrency", plan_.concurrency, "HTTP clients")
      ->check(CLI::Range(1, 256));
    sub
      .add_option("--cancel-share", plan_.cancel_share,
                  "share of orders cancelled afterwards")
      ->check(CLI::Range(0.0, 1.0));
    sub
      .add_option("--timeout", plan_.timeout_s,
                  "seconds to wait for quiescence")
      ->check(CLI::Range(1, 86400));
    sub.add_option("--report", plan_.report_file, "write the report as JSON");
    sub.add_option("--seed", seed_, "shorthand for --chaos.seed");
    sub.add_option("--rate", rate_, "shorthand for --chaos.rate")
      ->check(CLI::Range(0.0, 1.0));
  }

  int run(configuration& c) override {
    config::settings cfg = c.settings;
    // Without explicit choices every crash point is on but the DLQ's,
    // which only a parked record or a replay reaches (chaos places valid
    // orders).
    if (cfg.chaos.points.empty())
      for (std::string name : config::crash_point_names)
        if (name.rfind("dlq.", 0) != 0)
          cfg.chaos.points.push_back(name);
    if (seed_)
      cfg.chaos.seed = *seed_;
    if (rate_)
      cfg.chaos.rate = *rate_;
    else if (cfg.chaos.rate == 0)
      cfg.chaos.rate = 0.01;
    if (cfg.http.port == 8080)
      cfg.http.port = 0; // never collide with a running serve
    return run_chaos(cfg, plan_, c.caf);
  }

private:
  chaos_plan plan_;
  std::optional<std::uint64_t> seed_;
  std::optional<double> rate_;
};

} // namespace

std::unique_ptr<command> chaos_command() {
  return std::make_unique<chaos_cmd>();
}

} // namespace ef::app
