// `eventforge serve` under a service manager (Type=notify,
// deploy/systemd/eventforge.service): the test plays systemd's part with a
// datagram socket of its own, passed as NOTIFY_SOCKET to a real serve
// process on the embedded defaults, and reads what arrives and from whom.

#include "tests/support/harness.hpp"

#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <optional>

using namespace ef;
using namespace std::chrono_literals;

namespace {

/// One notification: its text and the sender's pid (SCM_CREDENTIALS, what
/// systemd checks against the main pid under NotifyAccess=main).
struct notification {
  std::string text;
  pid_t sender = 0;
};

/// The receiving end of the protocol, bound at `path`.
class notify_socket {
public:
  explicit notify_socket(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    int on = 1;
    if (fd_ < 0 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0)
      throw std::runtime_error("cannot bind a notification socket at " + path_);
    // Anyone may send, as to systemd's own socket: a child that switched
    // to another user (the private cluster, when the test runs as root)
    // could otherwise not be caught sending.
    ::chmod(path_.c_str(), 0666);
  }
  ~notify_socket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }

  /// The next notification, or none within `limit`.
  std::optional<notification> receive(std::chrono::milliseconds limit) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0)
      return std::nullopt;
    char buf[4096];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{buf, sizeof(buf)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    auto n = ::recvmsg(fd_, &msg, 0);
    if (n < 0)
      return std::nullopt;
    notification out{std::string(buf, static_cast<size_t>(n)), 0};
    for (auto* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
        out.sender = reinterpret_cast<ucred*>(CMSG_DATA(c))->pid;
    return out;
  }

  /// Notifications until one holds `what` (returned), or none within
  /// `limit`; every one read is appended to `seen`.
  std::optional<notification> await(const std::string& what,
                                    std::vector<notification>& seen,
                                    std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return std::nullopt;
      auto n = receive(left);
      if (!n)
        return std::nullopt;
      seen.push_back(*n);
      if (n->text.find(what) != std::string::npos)
        return n;
    }
  }

private:
  std::string path_;
  int fd_ = -1;
};

std::string describe(const std::vector<notification>& seen) {
  std::string out;
  for (auto& n : seen)
    out += "\n  pid " + std::to_string(n.sender) + ": " + n.text;
  return out.empty() ? " (none)" : out;
}

} // namespace

TEST_CASE("serve_tells_the_service_manager_ready_when_it_prints_ready_and_"
          "stopping_when_it_drains_and_nothing_else_speaks_for_it") {
  test::temp_dir dir;
  notify_socket manager(dir.path + "/notify");
  // On the embedded defaults: the private PostgreSQL cluster (a child
  // process that speaks the same protocol) and the in-process broker.
  auto data_dir = dir.path + "/pg";
  test::seed_cluster(data_dir);
  ::setenv("NOTIFY_SOCKET", (dir.path + "/notify").c_str(), 1);
  test::child_process serve({test::eventforge_binary(), "serve",
                             "--http.port=0", "--database.data-dir=" + data_dir,
                             "--database.durable=false",
                             "--kafka.session-timeout-ms=6000",
                             "--log.level=" + test::test_log_level()},
                            dir.path + "/serve.log");
  ::unsetenv("NOTIFY_SOCKET");
  auto serve_pid = serve.pid();

  auto ready_line = serve.await_line("ready", 120s);
  REQUIRE_FALSE(ready_line.empty());
  std::vector<notification> seen;
  auto ready = manager.await("READY=1", seen, 10s);
  INFO("notifications:" << describe(seen));
  REQUIRE(ready);
  CHECK(ready->text.find("STATUS=serving http=" +
                         test::ready_field(ready_line, "http")) !=
        std::string::npos);

  serve.signal(SIGTERM);
  auto stopping = manager.await("STOPPING=1", seen, 30s);
  INFO("notifications:" << describe(seen));
  REQUIRE(stopping);
  CHECK(stopping->text.find("STATUS=draining") != std::string::npos);
  CHECK(serve.wait() == 0);
  while (auto late = manager.receive(0ms))
    seen.push_back(*late);
  // Only serve itself speaks to the manager: a READY=1 from the private
  // cluster would tell systemd the service is up before it is.
  INFO("notifications:" << describe(seen));
  for (auto& n : seen)
    CHECK(n.sender == serve_pid);
}
