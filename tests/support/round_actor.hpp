#pragma once

// Helpers for deterministic tests of actors that work in rounds
// (actors/round_loop.hpp): when the next round is due, and a client that
// keeps the drain report it was answered.

#include "tests/support/actor_fixture.hpp"
#include <eventforge/messages/control_messages.hpp>

#include <caf/all.hpp>
#include <caf/detail/test_actor_clock.hpp>

#include <chrono>
#include <memory>
#include <optional>

namespace ef::test {

/// How long from the test clock's now until the earliest pending timeout
/// (the next round's delayed poll); nullopt if nothing is scheduled.
inline std::optional<std::chrono::milliseconds>
next_timeout_in(caf::scheduler::test_coordinator& sched) {
  auto& clock = sched.clock();
  if (clock.schedule().empty())
    return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(
    clock.schedule().begin()->first - clock.current_time);
}

/// An actor that keeps the drain report it receives.
inline caf::behavior
drain_client(caf::event_based_actor*,
             std::shared_ptr<std::optional<drain_report>> answer) {
  return {[=](drain_report& r) { *answer = std::move(r); }};
}

} // namespace ef::test
