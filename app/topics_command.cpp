// `eventforge topics create|check`: the order and DLQ topics on a real
// cluster, created through the Admin API and checked against the settings
// (docs/operations.md, "Creating the topics").

#include "app/command.hpp"
#include "kafka/topic_admin.hpp"

#include <iostream>

namespace ef::app {

int run_topics(const config::settings& cfg, bool create, bool json,
               int timeout_ms) {
  if (cfg.kafka.brokers.empty()) {
    // The in-process broker lives and dies with its process and creates
    // its own topics: there is nothing to create them in.
    std::cerr << "eventforge: topics needs --kafka.brokers (the cluster to "
                 "create the topics in; the in-process broker creates its "
                 "own)"
              << std::endl;
    return 2;
  }
  auto outcome =
    kafka::ensure_topics(kafka::cluster_of(cfg, cfg.kafka.brokers),
                         kafka::wanted_topics(cfg), create, timeout_ms);
  if (json)
    std::cout << kafka::to_json(outcome) << std::endl;
  else
    std::cout << kafka::to_text(outcome) << std::flush;
  return kafka::exit_code(outcome);
}

namespace {

class topics_cmd final : public command {
public:
  const char* name() const override { return "topics"; }
  const char* help() const override {
    return "create (or only check) the order and DLQ topics on "
           "kafka.brokers: exit 0 as wanted, 3 a topic differs or is "
           "missing, 4 the cluster did not answer, 1 it refused";
  }

  void add_arguments(CLI::App& sub) override {
    sub
      .add_option("action", action_,
                  "create: create the topics that are missing, then check "
                  "them all; check: only check")
      ->required();
    sub.add_option("--timeout-ms", timeout_ms_,
                   "how long each request to the cluster may take, 100 to "
                   "600000 (default 10000)");
    sub.add_flag("--json", json_, "one JSON document instead of lines");
  }

  int run(configuration& c) override {
    // Checked here rather than by CLI11, whose own exit codes are not 2.
    if (action_ != "create" && action_ != "check") {
      std::cerr << "eventforge: unknown topics action \"" << action_
                << "\" (create, check)" << std::endl;
      return 2;
    }
    if (timeout_ms_ < 100 || timeout_ms_ > 600000) {
      std::cerr << "eventforge: --timeout-ms must be between 100 and 600000, "
                   "got "
                << timeout_ms_ << std::endl;
      return 2;
    }
    return run_topics(c.settings, action_ == "create", json_, timeout_ms_);
  }

private:
  std::string action_;
  int timeout_ms_ = 10000;
  bool json_ = false;
};

} // namespace

std::unique_ptr<command> topics_command() {
  return std::make_unique<topics_cmd>();
}

} // namespace ef::app
