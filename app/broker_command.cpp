// `eventforge broker`: a standalone in-process Kafka-protocol broker for
// other processes, failed on command from its stdin (docs/chaos.md).

#include "app/command.hpp"
#include "app/embedded/topics.hpp"
#include "app/shutdown_signals.hpp"
#include "app/tools/broker_control.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
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
  void add_arguments(CLI::App& sub) override {
    sub.add_option("--faults-from", faults_from_,
                   "where fault commands come from: a file (e.g. a FIFO), "
                   "or - for stdin even when it is a terminal; by default "
                   "stdin, read only while this process is in its "
                   "terminal's foreground (`eventforge broker &` is never "
                   "stopped for reading it)");
  }

  int run(configuration& c) override {
    const auto& cfg = c.settings;
    int fd = 0;
    if (!faults_from_.empty() && faults_from_ != "-") {
      fd = ::open(faults_from_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        std::cerr << "eventforge: --faults-from " << faults_from_ << ": "
                  << std::strerror(errno) << std::endl;
        return 2;
      }
    }
    auto signals = block_shutdown_signals();
    kafka::embedded_broker b(cfg.kafka.embedded_brokers, broker_topics(cfg));
    std::cout << "ready kafka=" << b.bootstrap_servers()
              << " brokers=" << b.brokers() << " faults="
              << (faults_from_.empty() || faults_from_ == "-" ? "stdin"
                                                              : faults_from_)
              << std::endl;
    // Whoever started the broker, and no one else, may fail it.
    std::atomic<bool> stop{false};
    std::thread control([&] {
      serve_fault_commands(b, fd, std::cout, stop, faults_from_.empty());
    });
    wait_for_shutdown(signals);
    stop = true;
    control.join();
    if (fd != 0)
      ::close(fd);
    return 0;
  }

private:
  std::string faults_from_;
};

} // namespace

std::unique_ptr<command> broker_command() {
  return std::make_unique<broker_cmd>();
}

} // namespace ef::app
