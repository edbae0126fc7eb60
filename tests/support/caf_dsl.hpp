#pragma once

// CAF 0.17's test DSL (caf/test/dsl.hpp: expect, disallow, allow) in Catch2
// tests. The DSL reports through CAF's own unit-test macros, whose engine
// this project does not run: they are redefined here, before the DSL is
// read, in Catch's terms. A mismatch in expect() or a disallowed message
// fails the Catch test case: a value compared by `.with(...)` is a Catch
// CHECK; a missing or unexpected message is recorded as a Catch failure
// and then aborts (it is found in a destructor, where nothing may throw),
// which Catch reports as a fatal error of the running test case.
//
// Use: a fixture with a member `sched` (the test coordinator) in scope of
// the test body, then
//   expect((poll_atom), from(a).to(a).with(_));
//   disallow((poll_atom), from(a).to(a));

#include "messages/tree_messages.hpp"
#include <caf/test/unit_test.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

#undef CAF_MESSAGE
#undef CAF_FAIL
#undef CAF_REQUIRE
#undef CAF_REQUIRE_EQUAL
#undef CAF_CHECK
#undef CAF_CHECK_EQUAL

#define CAF_MESSAGE(msg)                                                       \
  do {                                                                         \
  } while (false)

#define CAF_FAIL(msg)                                                          \
  do {                                                                         \
    std::ostringstream caf_dsl_os__;                                           \
    caf_dsl_os__ << msg;                                                       \
    FAIL_CHECK("CAF test DSL: " << caf_dsl_os__.str());                        \
    std::abort();                                                              \
  } while (false)

#define CAF_REQUIRE(...)                                                       \
  do {                                                                         \
    if (!static_cast<bool>(__VA_ARGS__))                                       \
      CAF_FAIL("requirement failed: " #__VA_ARGS__);                           \
  } while (false)

#define CAF_REQUIRE_EQUAL(x, y) CAF_REQUIRE((x) == (y))

#define CAF_CHECK(...) CHECK(__VA_ARGS__)

#define CAF_CHECK_EQUAL(x, y) CHECK((x) == (y))

#include <caf/test/dsl.hpp>
