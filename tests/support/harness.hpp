#pragma once

// Test harness: real PostgreSQL (a throwaway private cluster), the real Kafka
// protocol (the in-process mock cluster), and the real tree and HTTP API.

#include "actors/chaos.hpp"
#include "kafka/embedded_broker.hpp"
#include "persistence/embedded_postgres.hpp"
#include <eventforge/actors/eventforge.hpp>
#include <eventforge/config/settings.hpp>
#include <eventforge/http/frontend.hpp>

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace ef::test {

/// A fresh directory under /tmp, removed with everything in it. Traversable
/// by other users so the "postgres" account can reach a cluster inside.
struct temp_dir {
  temp_dir();
  ~temp_dir();
  std::string path;
};

/// Makes `data_dir` (absent or empty) a copy of the run's template cluster
/// when ctest named one (EF_TEST_PG_TEMPLATE, tests/CMakeLists.txt), so the
/// cluster started there skips initdb. Without one it does nothing and the
/// cluster runs initdb itself, as it does for a test binary run by hand.
void seed_cluster(const std::string& data_dir);

/// A private PostgreSQL cluster for one test, plus helpers to read state.
class database {
public:
  database();
  std::string dsn() const { return pg_->dsn(); }
  persistence::embedded_postgres& server() { return *pg_; }

  /// Runs `sql` and returns the first column of the first row.
  template <class T>
  T scalar(const std::string& sql) {
    return with_conn([&](pqxx::connection& c) {
      pqxx::nontransaction t(c);
      return t.exec1(sql)[0].as<T>();
    });
  }
  void exec(const std::string& sql);
  pqxx::connection& conn();
  /// Runs `f` on the test's connection; after a server restart broke it,
  /// once more on a new one.
  template <class F>
  auto with_conn(F f) {
    try {
      return f(conn());
    } catch (const pqxx::broken_connection&) {
      conn_.reset();
      return f(conn());
    }
  }

private:
  temp_dir dir_;
  std::unique_ptr<persistence::embedded_postgres> pg_;
  std::unique_ptr<pqxx::connection> conn_;
};

/// The log level of tests: EF_TEST_LOG, or warn.
std::string test_log_level();
/// Settings tuned for tests: free HTTP port, short group session timeout.
config::settings test_settings();

/// Polls `pred` every 20 ms until it holds or `limit` passes. Waits for a
/// durable condition; the test then asserts on that state.
bool wait_until(const std::function<bool()>& pred,
                std::chrono::milliseconds limit = std::chrono::seconds(60));

/// The whole EventForge tree plus HTTP API, in this process.
class tree {
public:
  /// `consumers`: where cfg.consumer.enabled is looked up (the built-in
  /// ones if null).
  tree(const config::settings& cfg, const endpoints& ep,
       std::shared_ptr<const consumer_registry> consumers = nullptr);
  ~tree();
  caf::actor_system& system() { return *sys_; }
  eventforge_actor root() const { return root_; }
  const std::string& url() const { return url_; }
  /// The tree's fault injector (no point enabled unless cfg.chaos says so).
  chaos& faults() { return *faults_; }
  /// The tree's metrics: what it has done so far, for waits paced by
  /// progress (N retries seen) rather than by time.
  const telemetry& metrics() const { return *metrics_; }
  /// Stops HTTP and the tree, waiting for every actor to finish.
  void stop();

private:
  caf::actor_system_config caf_cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  eventforge_actor root_;
  std::shared_ptr<telemetry> metrics_;
  std::shared_ptr<chaos> faults_;
  std::unique_ptr<app::http_frontend> http_;
  std::string url_;
};

/// POSTs JSON; returns (status, body).
std::pair<int, std::string>
post_json(const std::string& url, const std::string& path,
          const std::string& body, const std::string& idempotency_key = {},
          const std::string& content_type = "application/json");

/// An order body with one item.
std::string order_body(const std::string& customer, std::int64_t qty,
                       std::int64_t price_cents);

/// GET /metrics of the server at `url`; throws unless it answers 200.
std::string scrape(const std::string& url);

/// The value of one series (`name{labels}` as exposed) in a /metrics text,
/// empty if the series is absent: a missing series then fails every
/// comparison (`== 0` included) instead of passing as 0.
std::optional<double> value_of(const std::string& text,
                               const std::string& series);

/// Reads a string field of a JSON object text.
std::string json_field(const std::string& json, const std::string& key);

/// Runs a command line and returns (exit code, stdout + stderr).
std::pair<int, std::string> run_command(const std::string& cmd);

/// Path of the eventforge executable under test.
std::string eventforge_binary();

/// True once the outbox is drained, every enabled consumer marked every
/// event and every group committed up to the log end.
bool quiescent(database& db, const config::settings& cfg,
               const std::string& brokers);

/// Places orders of `customer` one at a time, each published before the
/// next, until there are `at_least` and every partition of the topic holds
/// a record; then waits for quiescence. Every partition's consumers have
/// then fetched, opened their sessions and committed. False if that takes
/// more than 50 orders or quiescence does not come.
bool warm_up_every_partition(tree& t, database& db, const config::settings& cfg,
                             const std::string& brokers,
                             const std::string& customer, int at_least = 3);

/// Counter snapshot of a running tree (telemetry series -> value).
using ef::counters;

} // namespace ef::test

namespace ef::test {

/// A child process whose stdout we read line by line (stderr goes to a log
/// file). Killed with SIGKILL if still running at destruction.
class child_process {
public:
  child_process(const std::vector<std::string>& argv,
                const std::string& stderr_path);
  ~child_process();

  /// Reads stdout until a line starting with `prefix`; returns it (empty on
  /// EOF or after `limit`).
  std::string
  await_line(const std::string& prefix,
             std::chrono::milliseconds limit = std::chrono::seconds(60));
  void signal(int sig);
  /// Writes `line` and a newline to the child's stdin (a pipe that stays
  /// open until this object goes).
  void write_line(const std::string& line);
  /// Waits for exit and returns the exit code (128+N for signal N).
  int wait();
  pid_t pid() const { return pid_; }
  /// Every line the child wrote to stdout, to its end: call it once the
  /// child has exited (it reads until EOF).
  std::vector<std::string> stdout_lines();

private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int in_fd_ = -1;
  std::string buffer_;
  std::vector<std::string> stdout_lines_;
};

/// Extracts "name=value" from a ready line.
std::string ready_field(const std::string& line, const std::string& name);

/// `eventforge broker` in a process of its own: a broker that outlives the
/// serve processes a test starts, kills and restarts.
class broker_process {
public:
  explicit broker_process(const std::string& log_path,
                          const std::vector<std::string>& extra = {});
  /// Its bootstrap servers ("" if it never got ready).
  const std::string& brokers() const { return brokers_; }
  /// Sends a fault command on its stdin and returns its answer line
  /// ("fault ok: ..." or "fault error: ...").
  std::string fault(const std::string& command);

private:
  child_process process_;
  std::string brokers_;
};

/// The command line of `eventforge serve` on this database and broker, on a
/// free port, with the tests' short group timeouts; `extra` is appended.
std::vector<std::string>
serve_command(const std::string& dsn, const std::string& brokers,
              const std::vector<std::string>& extra = {});

} // namespace ef::test
