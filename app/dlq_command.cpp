// `eventforge dlq ACTION [ID]`: operator access to the DLQ of a running
// system: list, show, replay (one entry or a fingerprint's group), discard.

#include "actors/dlq_operations.hpp"
#include "app/command.hpp"

#include <iostream>

namespace ef::app {
namespace {

using config::settings;
using result = dlq_operations::result;

/// `eventforge dlq replay|discard`'s exit status: 0 done (or a replay whose
/// publish the DLQ handler finishes), 1 refused or nothing changed, 3 the
/// outcome is unknown (the message says how to settle it).
int dlq_exit_code(const dlq_operations::outcome& r) {
  switch (r.what) {
  case result::done:
  case result::pending:
    return 0;
  case result::unknown:
    return 3;
  case result::refused:
  case result::unavailable:
    break;
  }
  return 1;
}

/// A fingerprint on one line: its first line, and how many more it has.
std::string one_line(const std::string& text) {
  auto end = text.find('\n');
  if (end == std::string::npos || end + 1 >= text.size())
    return text.substr(0, end);
  return text.substr(0, end) + " …";
}

class dlq_cmd final : public command {
public:
  const char* name() const override { return "dlq"; }
  const char* help() const override {
    return "list, show, replay or discard DLQ entries";
  }

  void add_arguments(CLI::App& sub) override {
    sub.add_option("action", action_, "list, show, replay or discard")
      ->required();
    sub.add_option("id", id_, "DLQ entry id (show, replay, discard)");
    sub.add_option("--status", status_, "list: only entries in this status");
    sub.add_option("--group", group_,
                   "replay: every parked entry of this group (its id as "
                   "`dlq list` prints it, or its fingerprint)");
    sub.add_flag("--dry-run", dry_run_,
                 "replay/discard: show what would happen");
    sub.add_flag("--json", json_,
                 "list: the groups and whole entries as one JSON document");
  }

  int run(configuration& c) override {
    const auto& cfg = c.settings;
    // Only a replay publishes: list, show and discard read and write the
    // database alone (a discard's release is published by the DLQ handler
    // of the running system).
    bool publishes = action_ == "replay" && !dry_run_;
    if (cfg.database.url.empty() || (publishes && cfg.kafka.brokers.empty())) {
      std::cerr << "eventforge: dlq " << action_ << " needs --database.url"
                << (publishes ? " and --kafka.brokers" : "")
                << " (the running system's, as printed in its ready line)"
                << std::endl;
      return 2;
    }
    dlq_operations ops(cfg.database.url,
                       publishes ? kafka::cluster_of(cfg, cfg.kafka.brokers)
                                 : kafka::connection{},
                       cfg.kafka.delivery_timeout_ms);
    if (action_ == "list")
      return list(ops.store());
    if (action_ == "show")
      return show(ops.store());
    if (action_ == "replay" && !group_.empty())
      return replay_group(ops);
    if (action_ == "replay" || action_ == "discard")
      return replay_or_discard(ops);
    std::cerr << "eventforge: unknown dlq action \"" << action_
              << "\" (list, show, replay, discard)" << std::endl;
    return 2;
  }

private:
  int list(persistence::dlq_records& store) const {
    if (json_) {
      std::string groups, entries;
      for (auto& g : store.groups())
        groups += (groups.empty() ? "" : ",") + ef::to_json(g);
      for (auto& e : store.list(status_, 1000))
        entries += (entries.empty() ? "" : ",") + ef::to_json(e);
      std::cout << "{\"groups\":[" << groups << "],\"entries\":[" << entries
                << "]}" << std::endl;
      return 0;
    }
    // One line per group and per entry: the group's id is what `replay
    // --group` takes (a fingerprint spans lines, and `$(...)` cuts its end).
    for (auto& g : store.groups())
      std::cout << "group " << g.id << ": " << g.count << " parked, oldest "
                << static_cast<long>(g.oldest_age_seconds)
                << " s: " << one_line(g.fingerprint) << "\n";
    for (auto& e : store.list(status_, 1000))
      std::cout << e.id << " " << e.status << " " << e.consumer << " event "
                << e.event_id << " order " << e.order_key << " "
                << e.error_class << ": " << one_line(e.error_message) << "\n";
    return 0;
  }

  int show(persistence::dlq_records& store) const {
    auto e = store.get(id_);
    if (!e) {
      std::cerr << "eventforge: no DLQ entry " << id_ << std::endl;
      return 1;
    }
    std::cout << ef::to_json(*e) << std::endl;
    return 0;
  }

  /// 0 if every entry was replayed or follows one that was, 3 if the
  /// outcome of any is unknown, else 1 (one was refused: it waits behind an
  /// entry the group does not contain, or the database failed).
  int replay_group(dlq_operations& ops) const {
    auto steps = ops.replay_group(group_, cli_actor(), dry_run_);
    if (steps.empty()) {
      std::cerr << "eventforge: no parked entries in group \"" << group_
                << "\" (`eventforge dlq list` prints each group's id)"
                << std::endl;
      return 1;
    }
    int code = 0;
    for (auto& s : steps) {
      std::cout << s.what.message << "\n";
      auto c = dlq_exit_code(s.what);
      code = c == 3 || code == 3 ? 3 : std::max(code, c);
    }
    return code;
  }

  int replay_or_discard(dlq_operations& ops) const {
    if (dry_run_) {
      std::cout << "would " << action_ << " " << id_ << "\n";
      return 0;
    }
    auto r = action_ == "replay" ? ops.replay(id_, cli_actor())
                                 : ops.discard(id_, cli_actor());
    auto code = dlq_exit_code(r);
    (code == 0 ? std::cout : std::cerr) << r.message << std::endl;
    return code;
  }

  std::string action_;
  std::int64_t id_ = 0;
  std::string status_;
  std::string group_;
  bool dry_run_ = false;
  bool json_ = false;
};

} // namespace

std::unique_ptr<command> dlq_command() {
  return std::make_unique<dlq_cmd>();
}

} // namespace ef::app
