#pragma once

// CAF 0.17's testing DSL (caf/test/dsl.hpp) inside Catch2: the test
// coordinator fixture, and `expect`, `allow`, `disallow` and `inject` on the
// messages actors exchange. The DSL reports through CAF's own unit-test
// engine; caf_dsl_bridge.cpp implements that engine's hooks on Catch2, so a
// failed `expect(... .with(x))` field is a failed Catch2 check, and a failed
// requirement (no such message, another message first) ends the test
// process with the expected and the found message on stderr, as in CAF's
// own suites (it happens inside a destructor, where nothing may throw).

#include <catch2/catch.hpp>

#include <caf/test/dsl.hpp>

#include <eventforge/actors/eventforge.hpp>

namespace ef::test {

/// An actor system config with EventForge's error categories.
struct dsl_config : caf::actor_system_config {
  dsl_config() { ef::configure_actor_system(*this); }
};

/// An actor system on CAF's test coordinator: nothing runs until the test
/// runs it (`expect`, `sched.run_once()`, `run()`), and delayed messages
/// wait for `trigger_timeouts()`. `self` is a scoped actor for requests.
using dsl_fixture = test_coordinator_fixture<dsl_config>;

} // namespace ef::test
