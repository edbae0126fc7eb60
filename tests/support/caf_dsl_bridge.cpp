// CAF 0.17's unit-test engine hooks, the ones caf/test/dsl.hpp calls,
// reported through Catch2 (tests/support/caf_dsl.hpp). CAF ships them as
// caf/test/unit_test_impl.hpp together with its own main() and test
// registry; only the reporting is needed here.

#include <catch2/catch.hpp>

#include <caf/test/unit_test.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

namespace caf::test {

namespace {

/// What CAF's checks printed since the last one passed or failed.
std::ostringstream& captured() {
  static std::ostringstream out;
  return out;
}

/// The text without the terminal's color codes CAF adds.
std::string plain(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\033') {
      while (i < s.size() && s[i] != 'm')
        ++i;
      continue;
    }
    out += s[i];
  }
  return out;
}

std::string take_captured() {
  auto text = plain(captured().str());
  captured().str({});
  return text;
}

/// The last failure reported, for a requirement that fails after it.
std::string last_failure;

const char* last_file = "<none>";
size_t last_line = 0;

struct catch_test : test {
  catch_test() : test("catch2", false) {}
  void run_test_impl() override {}
};

} // namespace

test::test(std::string test_name, bool disabled_by_default)
    : expected_failures_(0), name_(std::move(test_name)), good_(0), bad_(0),
      disabled_(disabled_by_default) {}

test::~test() = default;

void test::pass() {
  ++good_;
  captured().str({});
}

void test::fail(bool expected) {
  ++bad_;
  if (expected)
    ++expected_failures_;
  last_failure = take_captured();
  FAIL_CHECK("CAF check failed: " << last_failure);
}

logger::logger()
    : level_console_(level::massive), level_file_(level::quiet),
      console_(&captured()) {}

logger& logger::instance() {
  static logger l;
  return l;
}

logger::stream::stream(logger& parent, level lvl)
    : parent_(parent), lvl_(lvl) {}

logger::stream logger::error() {
  return {*this, level::error};
}
logger::stream logger::info() {
  return {*this, level::info};
}
logger::stream logger::verbose() {
  return {*this, level::verbose};
}
logger::stream logger::massive() {
  return {*this, level::massive};
}

int engine::argc() {
  return 0;
}
char** engine::argv() {
  return nullptr;
}
test* engine::current_test() {
  static catch_test t;
  return &t;
}
const char* engine::last_check_file() {
  return last_file;
}
void engine::last_check_file(const char* file) {
  last_file = file;
}
size_t engine::last_check_line() {
  return last_line;
}
void engine::last_check_line(size_t line) {
  last_line = line;
}

namespace detail {

[[noreturn]] void requirement_failed(const std::string& msg) {
  std::cerr << "\nCAF requirement failed in test \""
            << Catch::getResultCapture().getCurrentTestName() << "\": " << msg
            << "\n  last check at " << last_file << ":" << last_line << "\n"
            << last_failure << take_captured() << std::endl;
  std::abort();
}

const char* fill(size_t) {
  return " ";
}

bool check(test* parent, const char* file, size_t line, const char* expr,
           bool should_fail, bool result) {
  if (result) {
    parent->pass();
  } else {
    captured() << file << ":" << line << " " << expr << "\n";
    parent->fail(should_fail);
  }
  return result;
}

} // namespace detail

} // namespace caf::test
