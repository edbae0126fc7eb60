#include "persistence/embedded_postgres.hpp"

#include <libpq-fe.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace ef::persistence {

namespace {

/// The account the server runs as when we are root.
struct run_as {
  bool drop = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

run_as server_account() {
  run_as r;
  if (geteuid() != 0)
    return r;
  auto* pw = getpwnam("postgres");
  if (pw == nullptr)
    throw std::runtime_error(
      "running as root, but there is no \"postgres\" user to run the private "
      "PostgreSQL cluster as (install the postgresql package)");
  r.drop = true;
  r.uid = pw->pw_uid;
  r.gid = pw->pw_gid;
  return r;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0)
      ::close(fd);
    throw std::runtime_error("cannot find a free loopback port: " +
                             std::string(std::strerror(errno)));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// Our environment without NOTIFY_SOCKET. The socket is systemd's line to
/// the service's main process (deploy/systemd/eventforge.service); Debian's
/// PostgreSQL speaks the same protocol, and given the socket the private
/// cluster would report READY=1 for a service that is not ready yet.
std::vector<char*> server_environment() {
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "NOTIFY_SOCKET=", 14) != 0)
      env.push_back(*e);
  env.push_back(nullptr);
  return env;
}

/// Forks and execs `argv` as the server account. In the child, output goes
/// to `log_path`; `death_signal` (if non-zero) is delivered to the child when
/// this thread's process dies.
pid_t spawn(const std::vector<std::string>& argv, const run_as& as,
            const std::string& log_path, int death_signal) {
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  auto env = server_environment(); // before fork: no allocation in the child
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error("fork failed: " +
                             std::string(std::strerror(errno)));
  if (pid > 0)
    return pid;
  // Child: only async-signal-safe calls from here on.
  int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ::setsid(); // keep terminal signals (Ctrl-C) for our own shutdown order
  if (as.drop) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(as.gid) != 0 ||
        ::setuid(as.uid) != 0)
      ::_exit(126);
  }
  // After setuid: a credential change clears the parent-death signal.
  if (death_signal != 0) {
    ::prctl(PR_SET_PDEATHSIG, death_signal);
    if (getppid() != parent)
      ::_exit(125);
  }
  ::execve(args[0], args.data(), env.data());
  ::_exit(127);
}

int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string tail_of(const std::string& path) {
  std::ifstream f(path);
  std::string line, out;
  std::vector<std::string> lines;
  while (std::getline(f, line))
    lines.push_back(line);
  for (size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size();
       ++i)
    out += "\n  " + lines[i];
  return out;
}

/// Whether the file at `path` holds `text` past its first `offset` bytes
/// (what one server start wrote to a log that every start appends to).
bool log_has_since(const std::string& path, std::uintmax_t offset,
                   const std::string& text) {
  std::ifstream f(path);
  f.seekg(static_cast<std::streamoff>(offset));
  std::string line;
  while (std::getline(f, line))
    if (line.find(text) != std::string::npos)
      return true;
  return false;
}

/// Whether postmaster.pid in `data_dir` is that of the server `pid` and
/// says it accepts connections (its eighth line, PostgreSQL 10 and later).
bool serves(const std::string& data_dir, pid_t pid) {
  std::ifstream f(data_dir + "/postmaster.pid");
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);)
    lines.push_back(line);
  return lines.size() >= 8 && lines[0] == std::to_string(pid) &&
         lines[7].rfind("ready", 0) == 0;
}

bool pid_alive(pid_t pid) {
  return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

/// A server left over from a killed predecessor (its parent-death signal is a
/// fast shutdown) may still hold the data directory; wait for it to go.
void wait_for_stale_postmaster(const std::string& data_dir) {
  auto pid_file = data_dir + "/postmaster.pid";
  std::ifstream f(pid_file);
  pid_t pid = 0;
  if (!(f >> pid) || !pid_alive(pid))
    return;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (pid_alive(pid)) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("data directory " + data_dir +
                               " is in use by a running server (pid " +
                               std::to_string(pid) + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

} // namespace

embedded_postgres::embedded_postgres(options opts)
    : bin_dir_(std::move(opts.bin_dir)), port_(opts.port),
      durable_(opts.durable) {
  std::error_code ec;
  fs::create_directories(opts.data_dir, ec);
  if (ec)
    throw std::runtime_error("cannot create data directory " + opts.data_dir +
                             ": " + ec.message());
  data_dir_ = fs::canonical(opts.data_dir).string();
  if (!fs::exists(bin_dir_ + "/postgres"))
    throw std::runtime_error("no PostgreSQL server at " + bin_dir_ +
                             "/postgres (set database.pg-bin-dir)");
  port_is_ours_ = port_ == 0;
  if (port_is_ours_)
    port_ = free_port();
  init_cluster();
  start();
}

embedded_postgres::~embedded_postgres() {
  try {
    stop();
  } catch (...) {
    // Destructors must not throw; the death signal still stops the server.
  }
}

void embedded_postgres::init_cluster() {
  if (!fs::exists(data_dir_ + "/PG_VERSION"))
    initialize(data_dir_, bin_dir_);
}

void embedded_postgres::initialize(const std::string& data_dir,
                                   const std::string& bin_dir) {
  auto as = server_account();
  ::chmod(data_dir.c_str(), 0700);
  if (as.drop && ::chown(data_dir.c_str(), as.uid, as.gid) != 0)
    throw std::runtime_error("cannot hand " + data_dir +
                             " to user postgres: " + std::strerror(errno));
  auto log = data_dir + "/../initdb.log";
  pid_t pid = spawn({bin_dir + "/initdb", "-D", data_dir, "-U", "postgres",
                     "--auth=trust", "-E", "UTF8", "--no-locale", "-N"},
                    as, log, 0);
  if (int rc = wait_exit(pid); rc != 0) {
    std::string hint;
    if (rc == 1 && as.drop)
      hint = " (user postgres must be able to reach " + data_dir +
             ": every parent directory needs the x permission for it)";
    throw std::runtime_error("initdb failed with exit code " +
                             std::to_string(rc) + hint + tail_of(log));
  }
}

void embedded_postgres::start() {
  if (pid_ > 0)
    return;
  wait_for_stale_postmaster(data_dir_);
  auto log = data_dir_ + "/server.log";
  // Durable unless asked otherwise (database.durable): an accepted order
  // must survive the machine, not just the process. Without durability a
  // commit still waits for its WAL to reach the kernel (synchronous_commit
  // stays on): with it off, a crash of the server alone lost the last
  // commits (the database-outage test caught it). Commit timestamps let
  // `eventforge bench` read end-to-end latencies from the database's own
  // clocks (a few bytes per transaction).
  const char* sync = durable_ ? "on" : "off";
  std::vector<std::string> argv{bin_dir_ + "/postgres",
                                "-D",
                                data_dir_,
                                "-c",
                                "listen_addresses=127.0.0.1",
                                "-c",
                                "unix_socket_directories=",
                                "-c",
                                std::string("fsync=") + sync,
                                "-c",
                                std::string("full_page_writes=") + sync,
                                "-c",
                                "synchronous_commit=on",
                                "-c",
                                "max_connections=200",
                                "-c",
                                "track_commit_timestamp=on"};
  // Statement counts per query (`eventforge bench`'s cost phase, and any
  // operator's pg_stat_statements view) where the server has the module;
  // it costs a hash lookup per statement.
  if (fs::exists(bin_dir_ + "/../lib/pg_stat_statements.so")) {
    argv.push_back("-c");
    argv.push_back("shared_preload_libraries=pg_stat_statements");
  }
  // free_port() only found a port that was free a moment ago: another
  // process may bind it before the server does (a test suite starting
  // clusters and brokers in parallel did). While no client has seen the
  // port, a server refused it starts again on another one.
  constexpr int port_attempts = 5;
  for (int attempt = 1;; ++attempt) {
    std::error_code ec;
    auto log_start = fs::exists(log) ? fs::file_size(log, ec) : 0;
    auto with_port = argv;
    with_port.insert(with_port.end(), {"-p", std::to_string(port_)});
    pid_ = spawn(with_port, server_account(), log, SIGINT);
    if (await_ready(log) == startup::ready)
      break;
    if (!port_is_ours_ || attempt == port_attempts ||
        !log_has_since(log, log_start, "Address already in use"))
      throw std::runtime_error("PostgreSQL exited during start-up (see " + log +
                               ")" + tail_of(log));
    port_ = free_port();
  }
  port_is_ours_ = false; // clients know it now: a restart keeps it
}

embedded_postgres::startup
embedded_postgres::await_ready(const std::string& log) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto conninfo = dsn() + "?connect_timeout=1";
  // A ping alone could be answered by whoever took the port; the server's
  // own pid file says it is this server, and that it is ready.
  while (!serves(data_dir_, pid_) || PQping(conninfo.c_str()) != PQPING_OK) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return startup::exited;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      stop(true);
      throw std::runtime_error("PostgreSQL did not accept connections within "
                               "30 s (see " +
                               log + ")" + tail_of(log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return startup::ready;
}

void embedded_postgres::stop(bool immediate) {
  if (pid_ <= 0)
    return;
  // SIGINT: fast shutdown (clean); SIGQUIT: immediate (crash recovery next).
  ::kill(pid_, immediate ? SIGQUIT : SIGINT);
  wait_exit(pid_);
  pid_ = -1;
}

std::string embedded_postgres::dsn() const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) +
         "/postgres";
}

} // namespace ef::persistence
