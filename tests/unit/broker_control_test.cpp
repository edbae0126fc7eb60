// The standalone broker's fault input: bounded lines, and a terminal read
// only while the broker is in its foreground (`eventforge broker &` in an
// interactive shell must not be stopped by SIGTTIN).

#include "app/tools/broker_control.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <sstream>
#include <thread>

using namespace ef;

namespace {

/// Writes `input` into a pipe, closes it, and returns what the broker's
/// control answered, line by line, once the input ended.
std::string answers_to(const std::string& input) {
  kafka::embedded_broker broker(1, {{"orders", 1}});
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::ostringstream out;
  std::atomic<bool> stop{false};
  std::thread control(
    [&] { app::serve_fault_commands(broker, fds[0], out, stop); });
  for (size_t at = 0; at < input.size();) {
    auto n = ::write(fds[1], input.data() + at, input.size() - at);
    REQUIRE(n > 0);
    at += static_cast<size_t>(n);
  }
  ::close(fds[1]);
  control.join(); // the input ended
  ::close(fds[0]);
  return out.str();
}

} // namespace

TEST_CASE("a_fault_line_longer_than_its_bound_is_answered_and_dropped_and_the_"
          "next_command_runs") {
  // Without a newline for 100 KiB, then the rest of that line, then a
  // command: one error, then the command's answer.
  auto out = answers_to(std::string(100 * 1024, 'x') + "y\nnot-a-fault\n");
  INFO(out);
  auto first = out.find('\n');
  CHECK(out.substr(0, first) ==
        "fault error: a line longer than 4096 bytes; dropped");
  INFO("then one answer, for not-a-fault, and no second drop");
  CHECK(out.find("dropped", first) == std::string::npos);
  CHECK(out.find("unknown command \"not-a-fault\"", first) !=
        std::string::npos);
  // A long line that arrives whole, newline and all, is refused too.
  auto whole = answers_to(std::string(5000, 'z') + "\n");
  CHECK(whole == "fault error: a line longer than 4096 bytes; dropped\n");
}

TEST_CASE("a_terminal_is_read_only_in_its_foreground_and_a_pipe_always") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  CHECK(app::may_read_without_stopping(fds[0]));
  ::close(fds[0]);
  ::close(fds[1]);
  // A terminal whose foreground is not this process's group (a pseudo
  // terminal this process does not control): reading it could stop a job.
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(slave >= 0);
  CHECK_FALSE(app::may_read_without_stopping(slave));
  ::close(slave);
  ::close(master);
}
