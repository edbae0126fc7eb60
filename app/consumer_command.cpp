// `eventforge consumer list|pause|resume|reset [NAME]`: an operator's
// control of a consumer on every node at once (issue 42.5). Pause and resume
// are durable (the database) and obeyed by each node's member within a
// second or so; a reset moves a paused consumer's committed offsets and
// says how many records will be read again.

#include "actors/consumer_operations.hpp"
#include "app/command.hpp"

#include <iostream>
#include <regex>
#include <variant>

namespace ef::app {
namespace {

/// `--to-time`: RFC 3339 in UTC ("2026-12-08T10:00:00Z") or Unix ms.
std::optional<std::int64_t> parse_time(const std::string& text) {
  static const std::regex unix_ms("[0-9]{1,15}");
  if (std::regex_match(text, unix_ms))
    return std::stoll(text);
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || std::string(end) != "Z")
    return std::nullopt;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000;
}

/// The reset's target from its three exclusive options, or what is wrong.
std::variant<reset_target, std::string>
target_of(bool earliest, const std::string& offset, const std::string& time) {
  if (earliest + !offset.empty() + !time.empty() != 1)
    return std::string("reset needs exactly one of --to-earliest, "
                       "--to-offset P:O, --to-time T");
  reset_target t;
  if (earliest)
    return t;
  if (!offset.empty()) {
    static const std::regex p_o("([0-9]{1,6}):([0-9]{1,18})");
    std::smatch m;
    if (!std::regex_match(offset, m, p_o))
      return "--to-offset " + offset +
             ": must be PARTITION:OFFSET, e.g. 0:1200";
    t.what = reset_target::kind::offset;
    t.partition = std::stoi(m[1]);
    t.offset = std::stoll(m[2]);
    return t;
  }
  auto ms = parse_time(time);
  if (!ms)
    return "--to-time " + time +
           ": must be UTC as 2026-12-08T10:00:00Z, or Unix milliseconds";
  t.what = reset_target::kind::time;
  t.unix_ms = *ms;
  return t;
}

class consumer_cmd final : public command {
public:
  const char* name() const override { return "consumer"; }
  const char* help() const override {
    return "list, pause, resume or reset a consumer on every node";
  }

  void add_arguments(CLI::App& sub) override {
    sub.add_option("action", action_, "list, pause, resume or reset")
      ->required();
    sub.add_option("name", name_, "the consumer (pause, resume, reset)");
    sub.add_flag("--to-earliest", earliest_,
                 "reset: to the oldest record the broker holds");
    sub.add_option("--to-offset", offset_,
                   "reset: PARTITION:OFFSET, the next offset to read");
    sub.add_option("--to-time", time_,
                   "reset: the first record at or after this time "
                   "(2026-12-08T10:00:00Z, or Unix ms)");
    sub.add_flag("--dry-run", dry_run_, "reset: show the plan only");
    sub.add_flag("--json", json_, "list: as one JSON document");
  }

  int run(configuration& c) override {
    const auto& cfg = c.settings;
    bool needs_broker = action_ == "reset";
    if (cfg.database.url.empty() ||
        (needs_broker && cfg.kafka.brokers.empty())) {
      std::cerr << "eventforge: consumer " << action_ << " needs --database.url"
                << (needs_broker ? " and --kafka.brokers" : "")
                << " (the running system's, as printed in its ready line)"
                << std::endl;
      return 2;
    }
    if (action_ != "list" && action_ != "pause" && action_ != "resume" &&
        action_ != "reset")
      return usage("unknown consumer action \"" + action_ +
                   "\" (list, pause, resume, reset)");
    consumer_operations ops(cfg, cfg.database.url,
                            needs_broker
                              ? kafka::cluster_of(cfg, cfg.kafka.brokers)
                              : kafka::connection{});
    if (action_ == "list")
      return list(ops);
    if (auto why = ops.check_name(name_); !why.empty())
      return usage(name_.empty() ? "consumer " + action_ + " needs a NAME"
                                 : why);
    if (action_ == "reset")
      return reset(ops);
    std::cout << ops.set_paused(name_, action_ == "pause", cli_actor())
              << std::endl;
    return 0;
  }

private:
  static int usage(const std::string& why) {
    std::cerr << "eventforge: " << why << std::endl;
    return 2;
  }

  int list(consumer_operations& ops) const {
    auto all = ops.overview();
    if (json_) {
      std::cout << all.dump() << std::endl;
      return 0;
    }
    for (auto& c : all) {
      std::cout << c["consumer"].get<std::string>() << ": "
                << (c["paused"].get<bool>()
                      ? "paused by " + c["changed_by"].get<std::string>() +
                          " at " + c["changed_at"].get<std::string>()
                      : std::string("running"))
                << "\n";
      for (auto& m : c["members"])
        std::cout << "  " << m["node"].get<std::string>() << " "
                  << m["state"].get<std::string>() << " partitions "
                  << m["partitions"].dump() << "\n";
    }
    return 0;
  }

  int reset(consumer_operations& ops) const {
    auto target = target_of(earliest_, offset_, time_);
    if (auto* why = std::get_if<std::string>(&target))
      return usage(*why);
    auto plan = ops.plan_reset(name_, std::get<reset_target>(target));
    for (auto& p : plan.partitions)
      std::cout << name_ << " partition " << p.id << ": " << p.committed
                << " -> " << p.target << "\n";
    std::cout << name_ << ": " << plan.reread
              << " record(s) will be read again; what was applied before is "
                 "suppressed as a duplicate (the idempotency guard)"
              << std::endl;
    if (!plan.refused.empty()) {
      std::cerr << "eventforge: reset refused: " << plan.refused << std::endl;
      return 1;
    }
    if (dry_run_ || plan.partitions.empty())
      return 0;
    ops.apply_reset(plan, cli_actor());
    std::cout << name_
              << ": offsets reset; resume it to read (eventforge "
                 "consumer resume "
              << name_ << ")" << std::endl;
    return 0;
  }

  std::string action_, name_, offset_, time_;
  bool earliest_ = false, dry_run_ = false, json_ = false;
};

} // namespace

std::unique_ptr<command> consumer_command() {
  return std::make_unique<consumer_cmd>();
}

} // namespace ef::app
