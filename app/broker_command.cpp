// `eventforge broker`: a standalone in-process Kafka-protocol broker for
// other processes, failed on command from its stdin (docs/chaos.md).

#include "app/command.hpp"
#include "app/embedded/topics.hpp"
#include "app/shutdown_signals.hpp"
#include "app/tools/broker_control.hpp"

#include <atomic>
#include <iostream>
#include <thread>

namespace ef::app {
namespace {

class broker_cmd final : public command {
public:
  const char* name() const override { return "broker"; }
  const char* help() const override {
    return "run an in-process Kafka-protocol broker and print its "
           "bootstrap servers";
  }
  int run(configuration& c) override {
    const auto& cfg = c.settings;
    auto signals = block_shutdown_signals();
    kafka::embedded_broker b(cfg.kafka.embedded_brokers, broker_topics(cfg));
    std::cout << "ready kafka=" << b.bootstrap_servers()
              << " brokers=" << b.brokers() << " faults=stdin" << std::endl;
    // Whoever started the broker, and no one else, may fail it.
    std::atomic<bool> stop{false};
    std::thread control([&] { serve_fault_commands(b, 0, std::cout, stop); });
    wait_for_shutdown(signals);
    stop = true;
    control.join();
    return 0;
  }
};

} // namespace

std::unique_ptr<command> broker_command() {
  return std::make_unique<broker_cmd>();
}

} // namespace ef::app
