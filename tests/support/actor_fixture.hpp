#pragma once

// Deterministic actor tests: an actor system on CAF's test coordinator, where
// nothing runs until the test runs it, one message at a time, and delayed
// messages (timeouts, backoffs) fire only when the test triggers them. No
// database, no broker: the actors under test get fakes behind their
// interfaces (group_member_deps, ...).

#include "actors/context.hpp"
#include <eventforge/actors/eventforge.hpp>

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include <algorithm>
#include <functional>
#include <memory>

namespace ef::test {

class actor_fixture {
public:
  actor_fixture() {
    ef::configure_actor_system(cfg_);
    cfg_.set("scheduler.policy", caf::atom("testing"));
    cfg_.set("logger.file-verbosity", caf::atom("quiet"));
    cfg_.set("logger.console-verbosity", caf::atom("quiet"));
    sys_ = std::make_unique<caf::actor_system>(cfg_);
    sched_ =
      &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
  }

  ~actor_fixture() {
    // Whatever the test left running is stopped; the system waits for it.
    sched_->run(100000);
  }

  caf::actor_system& sys() { return *sys_; }
  caf::scheduler::test_coordinator& sched() { return *sched_; }

  /// Runs one message at a time until `done` holds; false if it does not
  /// within `max_messages` (an actor that polls forever never runs dry).
  /// When no message is left, the next pending timeout fires.
  bool run_until(const std::function<bool()>& done,
                 size_t max_messages = 10000) {
    for (size_t i = 0; i < max_messages; ++i) {
      if (done())
        return true;
      if (!step() && !sched_->trigger_timeout())
        return done();
    }
    return done();
  }

  /// Runs `n` messages (fewer if none are left).
  void run(size_t n) {
    for (size_t i = 0; i < n && step(); ++i)
      ;
  }

  /// Runs one message of the actor whose turn it is. The test coordinator
  /// resumes the same actor again while it has messages; an actor that
  /// sends itself one after another (a poll loop) would starve the others,
  /// so the actors take turns.
  bool step() {
    auto& jobs = sched_->jobs;
    if (jobs.size() > 1 && jobs.front() == last_)
      std::rotate(jobs.begin(), jobs.begin() + 1, jobs.end());
    if (jobs.empty())
      return false;
    last_ = jobs.front();
    return sched_->try_run_once();
  }

  /// A context for one tree with these settings and no I/O behind it.
  static context_ptr make_context(config::settings cfg) {
    auto ctx = std::make_shared<context>();
    ctx->cfg = std::move(cfg);
    ctx->metrics = std::make_shared<telemetry>();
    ctx->faults = std::make_shared<chaos>(ctx->cfg.chaos, ctx->metrics);
    return ctx;
  }

private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  caf::resumable* last_ = nullptr;
};

} // namespace ef::test
