// The commands that read a running system and change nothing:
// `eventforge verify` (invariants I1-I5 from durable state) and
// `eventforge status` (one screen for operators).

#include "app/command.hpp"
#include "app/page/ops_view.hpp"
#include <eventforge/embedded/verifier.hpp>

#include <iostream>

namespace ef::app {
namespace {

class verify_cmd final : public command {
public:
  const char* name() const override { return "verify"; }
  const char* help() const override {
    return "check invariants I1-I5 of a system from durable state";
  }
  int run(configuration& c) override {
    const auto& cfg = c.settings;
    if (cfg.database.url.empty() || cfg.kafka.brokers.empty()) {
      std::cerr << "eventforge: verify needs --database.url and "
                   "--kafka.brokers (the running system's, as printed in its "
                   "ready line): I5 compares committed offsets with the "
                   "broker's log ends"
                << std::endl;
      return 2;
    }
    auto result = verify(cfg, cfg.database.url, cfg.kafka.brokers);
    std::cout << to_text(result);
    return result.ok() ? 0 : 1;
  }
};

class status_cmd final : public command {
public:
  const char* name() const override { return "status"; }
  const char* help() const override {
    return "one screen for operators: outbox, relay owners, lag, DLQ "
           "(exit 0, or 4 when a source could not be read)";
  }
  int run(configuration& c) override {
    const auto& cfg = c.settings;
    // Without a broker the database's part is shown and the lag is named
    // as not read.
    if (cfg.database.url.empty()) {
      std::cerr << "eventforge: status needs --database.url, and "
                   "--kafka.brokers for consumer lag (the running system's, "
                   "as printed in its ready line)"
                << std::endl;
      return 2;
    }
    auto v = read_ops_view(cfg, cfg.database.url, cfg.kafka.brokers);
    std::cout << to_text(v, cfg);
    // 0: all it was asked for; 4: printed, but a source could not be read
    // (named in its place). Never 1 for a broker outage: what the database
    // says is printed all the same.
    return v.partial() ? 4 : 0;
  }
};

} // namespace

std::unique_ptr<command> verify_command() {
  return std::make_unique<verify_cmd>();
}

std::unique_ptr<command> status_command() {
  return std::make_unique<status_cmd>();
}

} // namespace ef::app
