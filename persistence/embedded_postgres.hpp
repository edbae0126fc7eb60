#pragma once

#include <string>
#include <sys/types.h>

namespace ef::persistence {

/// A private PostgreSQL 15 cluster: initdb on first use, then the server runs
/// as a child process on loopback only, and stops when this object goes away
/// (or, via the parent-death signal, when this process dies, even by SIGKILL).
/// PostgreSQL refuses to run as root; when we are root, initdb and the server
/// run as the system user "postgres", which then owns the data directory.
class embedded_postgres {
public:
  struct options {
    std::string data_dir;                               ///< created if absent
    std::string bin_dir = "/usr/lib/postgresql/15/bin"; ///< initdb, postgres
    int port = 0;                                       ///< 0: pick a free one
    /// Commits reach the disk (fsync and full-page writes, PostgreSQL's
    /// defaults). false turns both off: commits then survive a crash of any
    /// process (synchronous_commit stays on, so a commit's WAL is in the
    /// kernel before it returns) but not an operating-system crash, and the
    /// cluster can be corrupt after one. For tests and throwaway runs.
    bool durable = true;
  };

  /// Initializes (if needed) and starts the cluster, waiting until it accepts
  /// connections. Throws std::runtime_error naming the step that failed.
  explicit embedded_postgres(options opts);
  ~embedded_postgres();

  embedded_postgres(const embedded_postgres&) = delete;
  embedded_postgres& operator=(const embedded_postgres&) = delete;

  /// Connection URI for the superuser database (no spaces: printable).
  std::string dsn() const;

  /// Stops the server: "fast" (clean) or "immediate" (crash; recovery runs on
  /// the next start). Idempotent.
  void stop(bool immediate = false);

  /// Starts the server again after stop(), on the same port and data.
  void start();

  /// Runs initdb into the existing, empty `data_dir` as the constructor does
  /// on first use (same account, encoding, locale and authentication), and
  /// starts no server. A host that makes many throwaway clusters (a test
  /// suite) can make one this way and start each as a copy: initdb costs
  /// about 1.3 s of CPU, a copy of its 39 MB about 0.13 s.
  static void initialize(const std::string& data_dir,
                         const std::string& bin_dir);

  int port() const { return port_; }
  const std::string& data_dir() const { return data_dir_; }

private:
  enum class startup { ready, exited };
  void init_cluster();
  /// Waits until the server just spawned accepts connections (ready) or
  /// exits (exited); throws after 30 s.
  startup await_ready(const std::string& log);
  std::string data_dir_;
  std::string bin_dir_;
  int port_;
  bool durable_;
  pid_t pid_ = -1;
  /// The port was picked here (options::port 0) and no server has run on it
  /// yet: if another process takes it first, start() may pick another.
  bool port_is_ours_ = false;
};

} // namespace ef::persistence
