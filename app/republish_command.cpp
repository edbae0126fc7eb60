// `eventforge republish`: queue sent events a consumer has not applied
// (lost by the broker) for the relays to publish again, by hand; audited.

#include "app/command.hpp"
#include "persistence/db_error.hpp"
#include "persistence/repair_store.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>

namespace ef::app {
namespace {

class republish_cmd final : public command {
public:
  const char* name() const override { return "republish"; }
  const char* help() const override {
    return "publish again sent events that consumers have not applied (e.g. "
           "lost by the broker); audited";
  }

  void add_arguments(CLI::App& sub) override {
    sub.add_option("--consumer", consumers_,
                   "only events this consumer has not applied (repeat; "
                   "default: every enabled consumer)");
    sub.add_option("--from-seq", from_seq_, "lowest outbox seq")
      ->check(CLI::NonNegativeNumber);
    sub.add_option("--to-seq", to_seq_, "highest outbox seq")
      ->check(CLI::NonNegativeNumber);
    sub.add_option("--since", since_,
                   "events created at or after (e.g. 2026-12-02T10:00Z)");
    sub.add_option("--until", until_, "events created before");
    sub.add_flag("--dry-run", dry_run_,
                 "only count what would be queued (recorded too)");
  }

  int run(configuration& c) override {
    const auto& cfg = c.settings;
    if (cfg.database.url.empty()) {
      std::cerr << "eventforge: republish needs --database.url (the running "
                   "system's, as printed in its ready line)"
                << std::endl;
      return 2;
    }
    persistence::republish_scope scope;
    if (!resolve_scope(cfg, scope))
      return 2;
    auto user = std::getenv("USER");
    auto actor = std::string("cli:") + (user ? user : "unknown");
    persistence::repair_store store(cfg.database.url);
    long n = 0;
    try {
      n = store.republish(scope, dry_run_, actor);
    } catch (const persistence::db_error& e) {
      std::cerr << "eventforge: republish refused, nothing changed: "
                << e.what() << std::endl;
      return 1;
    }
    if (dry_run_)
      std::cout << "would republish " << n << " event(s) (" << scope.describe()
                << "); run again without --dry-run to queue them" << std::endl;
    else
      std::cout << "queued " << n << " event(s) for republishing ("
                << scope.describe()
                << "); the relays publish them in seq order with their "
                   "original IDs"
                << std::endl;
    return 0;
  }

private:
  /// The arguments as a scope, or false (and why on stderr) if they name a
  /// consumer that is not enabled or an empty range of seqs.
  bool resolve_scope(const config::settings& cfg,
                     persistence::republish_scope& scope) const {
    const auto& enabled = cfg.consumer.enabled;
    scope.consumers = consumers_.empty() ? enabled : consumers_;
    for (auto& c : scope.consumers)
      if (std::find(enabled.begin(), enabled.end(), c) == enabled.end()) {
        std::cerr << "eventforge: --consumer " << c
                  << " is not an enabled consumer (consumer.enabled)"
                  << std::endl;
        return false;
      }
    if (from_seq_ && to_seq_ && *from_seq_ > *to_seq_) {
      std::cerr << "eventforge: --from-seq must not exceed --to-seq"
                << std::endl;
      return false;
    }
    scope.from_seq = from_seq_;
    scope.to_seq = to_seq_;
    scope.since = since_;
    scope.until = until_;
    return true;
  }

  std::vector<std::string> consumers_;
  std::optional<std::int64_t> from_seq_, to_seq_;
  std::optional<std::string> since_, until_;
  bool dry_run_ = false;
};

} // namespace

std::unique_ptr<command> republish_command() {
  return std::make_unique<republish_cmd>();
}

} // namespace ef::app
