#include "tests/support/harness.hpp"

#include "app/tools/pipeline_host.hpp"
#include "kafka/offsets.hpp"
#include <eventforge/actors/applied.hpp>
#include <eventforge/messages/atoms.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sys/stat.h>
#include <thread>
#include <utility>

namespace ef::test {

namespace {

/// What the last quiescence check found missing, printed by a wait_until
/// that gives up: a flaky wait then says which stage stalled.
std::string last_quiescence_gap;
/// Where the last quiescence check looked, for the stall report.
struct {
  std::string dsn, brokers;
  config::settings cfg;
} last_quiescence_at;

/// What a wait for quiescence that gave up saw in detail: which events each
/// consumer has not marked, each group's committed offsets against the log
/// ends, and every database session that is not idle (a worker waiting on a
/// lock or a connection shows here). Best effort: a failing read is printed.
void print_stall_report() {
  auto& at = last_quiescence_at;
  std::cerr << "stall report:\n";
  try {
    pqxx::connection c(at.dsn);
    pqxx::read_transaction t(c);
    for (auto& name : at.cfg.consumer.enabled) {
      auto r = t.exec_params(
        "SELECT e.seq, e.order_id::text, e.event_id::text, e.event_type, "
        "e.shard, e.created_at::text, coalesce(e.sent_at::text, 'unsent') "
        "FROM outbox e WHERE NOT EXISTS (SELECT 1 FROM processed_events p "
        "WHERE p.consumer = $1 AND p.event_id = e.event_id) ORDER BY e.seq "
        "LIMIT 10",
        name);
      for (const auto& row : r)
        std::cerr << "  " << name << " has no mark for outbox seq "
                  << row[0].c_str() << " order " << row[1].c_str() << " event "
                  << row[2].c_str() << " (" << row[3].c_str() << ", shard "
                  << row[4].c_str() << ", created " << row[5].c_str()
                  << ", sent " << row[6].c_str() << ")\n";
    }
    for (const auto& row : t.exec(
           "SELECT pid, application_name, state, coalesce(wait_event_type, "
           "'-'), coalesce(wait_event, '-'), coalesce(extract(epoch FROM "
           "now() - xact_start)::int::text, '-'), left(query, 160) FROM "
           "pg_stat_activity WHERE datname = current_database() AND pid <> "
           "pg_backend_pid() AND state <> 'idle'"))
      std::cerr << "  session " << row[0].c_str() << " [" << row[1].c_str()
                << "] " << row[2].c_str() << ", waits " << row[3].c_str() << "/"
                << row[4].c_str() << ", transaction " << row[5].c_str()
                << " s: " << row[6].c_str() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "  (database: " << e.what() << ")\n";
  }
  try {
    auto ends = kafka::log_end_offsets(at.brokers, at.cfg.kafka.topic,
                                       at.cfg.kafka.partitions);
    for (auto& name : at.cfg.consumer.enabled) {
      auto committed =
        kafka::committed_offsets(at.brokers, "eventforge." + name,
                                 at.cfg.kafka.topic, at.cfg.kafka.partitions);
      std::cerr << "  " << name << " committed/log end:";
      for (size_t p = 0; p < ends.size(); ++p)
        std::cerr << " p" << p << " " << committed[p] << "/" << ends[p];
      std::cerr << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "  (broker: " << e.what() << ")\n";
  }
  std::cerr << std::flush;
}

} // namespace

temp_dir::temp_dir() {
  char tmpl[] = "/tmp/eventforge-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  path = tmpl;
  ::chmod(path.c_str(), 0755);
}

temp_dir::~temp_dir() {
  // EF_TEST_KEEP=1 keeps a test's files (logs, data) for a post-mortem.
  if (const char* keep = std::getenv("EF_TEST_KEEP"); keep && *keep == '1') {
    std::fprintf(stderr, "kept %s\n", path.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

void seed_cluster(const std::string& data_dir) {
  const char* from = std::getenv("EF_TEST_PG_TEMPLATE");
  if (from == nullptr || *from == '\0')
    return;
  if (!std::filesystem::exists(std::string(from) + "/PG_VERSION"))
    throw std::runtime_error(std::string("EF_TEST_PG_TEMPLATE names ") + from +
                             ", which holds no cluster (ctest's fixture "
                             "setup.pg_template makes it)");
  if (std::filesystem::exists(data_dir)) {
    if (!std::filesystem::is_empty(data_dir))
      throw std::runtime_error("no template cluster copied into " + data_dir +
                               ": it is not empty");
    std::filesystem::remove(data_dir); // cp -a makes it
  }
  auto [rc, out] =
    run_command("cp -a '" + std::string(from) + "' '" + data_dir + "'");
  if (rc != 0)
    throw std::runtime_error("cannot copy the template cluster to " + data_dir +
                             ": " + out);
}

database::database() {
  persistence::embedded_postgres::options opts;
  opts.data_dir = dir_.path + "/pg";
  seed_cluster(opts.data_dir);
  // Throwaway clusters: no flush per commit (database.durable=false).
  opts.durable = false;
  pg_ = std::make_unique<persistence::embedded_postgres>(opts);
}

pqxx::connection& database::conn() {
  if (!conn_ || !conn_->is_open())
    conn_ = std::make_unique<pqxx::connection>(pg_->dsn());
  return *conn_;
}

void database::exec(const std::string& sql) {
  with_conn([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    t.exec(sql);
  });
}

std::string test_log_level() {
  // EF_TEST_LOG=info (or debug) shows the tree's log, in process or in a
  // child `serve`, when chasing a failure.
  auto* level = std::getenv("EF_TEST_LOG");
  return level ? level : "warn";
}

config::settings test_settings() {
  config::settings s;
  s.http.port = 0;
  s.kafka.session_timeout_ms = 6000;
  s.kafka.fetch_wait_max_ms = 20;
  s.supervisor.restart_backoff_ms = 10;
  s.log.level = test_log_level();
  return s;
}

bool wait_until(const std::function<bool()>& pred,
                std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  last_quiescence_gap.clear();
  for (;;) {
    if (pred())
      return true;
    if (std::chrono::steady_clock::now() > deadline) {
      std::cerr << "wait_until: gave up after " << limit.count() << " ms"
                << (last_quiescence_gap.empty()
                      ? std::string()
                      : "; the last quiescence check found " +
                          last_quiescence_gap)
                << std::endl;
      if (!last_quiescence_gap.empty())
        print_stall_report();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

tree::tree(const config::settings& cfg, const endpoints& ep,
           std::shared_ptr<const consumer_registry> consumers) {
  // ef::start applies cfg.log to EventForge's logger.
  configure_actor_system(caf_cfg_);
  sys_ = std::make_unique<caf::actor_system>(caf_cfg_);
  metrics_ = std::make_shared<telemetry>();
  faults_ = std::make_shared<chaos>(cfg.chaos, metrics_);
  root_ = ef::start(*sys_, cfg, ep, metrics_, faults_, std::move(consumers));
  http_ = std::make_unique<app::http_frontend>(*sys_, root_, cfg, metrics_, ep,
                                               faults_);
  http_->start();
  url_ = http_->url();
}

tree::~tree() {
  stop();
}

void tree::stop() {
  if (!sys_)
    return;
  http_.reset();
  caf::anon_send_exit(root_, caf::exit_reason::user_shutdown);
  root_ = eventforge_actor{};
  sys_->await_all_actors_done();
  sys_.reset();
}

std::pair<int, std::string> post_json(const std::string& url,
                                      const std::string& path,
                                      const std::string& body,
                                      const std::string& idempotency_key,
                                      const std::string& content_type) {
  httplib::Client cli(url);
  cli.set_read_timeout(30, 0);
  httplib::Headers headers;
  if (!idempotency_key.empty())
    headers.emplace("Idempotency-Key", idempotency_key);
  auto res = cli.Post(path.c_str(), headers, body, content_type.c_str());
  if (!res)
    return {0, "transport error: " + httplib::to_string(res.error())};
  return {res->status, res->body};
}

std::string order_body(const std::string& customer, std::int64_t qty,
                       std::int64_t price_cents) {
  return nlohmann::json{
    {"customer_id", customer},
    {"items", {{{"sku", "sku-1"}, {"qty", qty}, {"price_cents", price_cents}}}}}
    .dump();
}

std::string json_field(const std::string& json, const std::string& key) {
  auto v = nlohmann::json::parse(json, nullptr, false);
  if (v.is_discarded() || !v.is_object() || !v.contains(key) ||
      !v[key].is_string())
    return {};
  return v[key].get<std::string>();
}

std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr)
    return {-1, "popen failed"};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string scrape(const std::string& url) {
  httplib::Client cli(url);
  cli.set_read_timeout(30, 0);
  auto res = cli.Get("/metrics");
  if (!res || res->status != 200)
    throw std::runtime_error(
      "GET " + url + "/metrics: " +
      (res ? std::to_string(res->status) : std::string("no answer")));
  return res->body;
}

std::optional<double> value_of(const std::string& text,
                               const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos)
    return std::nullopt;
  return std::stod(text.substr(at + series.size() + 2));
}

std::string eventforge_binary() {
  return EF_BINARY_PATH;
}

bool quiescent(database& db, const config::settings& cfg,
               const std::string& brokers) {
  last_quiescence_at = {db.dsn(), brokers, cfg};
  last_quiescence_gap = applied_gap(cfg, {db.dsn(), brokers});
  return last_quiescence_gap.empty();
}

bool warm_up_every_partition(tree& t, database& db, const config::settings& cfg,
                             const std::string& brokers,
                             const std::string& customer, int at_least) {
  auto every_partition_has_a_record = [&] {
    auto ends =
      kafka::log_end_offsets(brokers, cfg.kafka.topic, cfg.kafka.partitions);
    return std::all_of(ends.begin(), ends.end(),
                       [](std::int64_t end) { return end > 0; });
  };
  for (int i = 0; i < at_least || !every_partition_has_a_record(); ++i) {
    if (i >= 50 ||
        post_json(t.url(), "/orders", order_body(customer, 1, 100)).first !=
          201 ||
        !wait_until([&] {
          return db.scalar<int>(
                   "SELECT count(*) FROM outbox WHERE sent_at IS NULL") == 0;
        }))
      return false;
  }
  return wait_until([&] { return quiescent(db, cfg, brokers); });
}

} // namespace ef::test

#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ef::test {

child_process::child_process(const std::vector<std::string>& argv,
                             const std::string& stderr_path) {
  int fds[2];
  int in[2];
  if (pipe(fds) != 0 || pipe(in) != 0)
    throw std::runtime_error("pipe failed");
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    ::dup2(fds[1], 1);
    ::dup2(in[0], 0);
    ::close(in[0]);
    ::close(in[1]);
    int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0)
      ::dup2(err, 2);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ::close(in[0]);
  out_fd_ = fds[0];
  in_fd_ = in[1];
}

void child_process::write_line(const std::string& line) {
  // A child that died must fail the test, not kill it with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  auto text = line + "\n";
  if (::write(in_fd_, text.data(), text.size()) !=
      static_cast<ssize_t>(text.size()))
    throw std::runtime_error("cannot write to the child's stdin");
}

child_process::~child_process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    wait();
  }
  if (out_fd_ >= 0)
    ::close(out_fd_);
  if (in_fd_ >= 0)
    ::close(in_fd_);
}

std::string child_process::await_line(const std::string& prefix,
                                      std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    size_t nl;
    while ((nl = buffer_.find('\n')) != std::string::npos) {
      auto line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      stdout_lines_.push_back(line);
      if (line.rfind(prefix, 0) == 0)
        return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - std::chrono::steady_clock::now())
                  .count();
    if (left <= 0)
      return {};
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0)
      return {};
    char buf[4096];
    auto n = ::read(out_fd_, buf, sizeof(buf));
    if (n <= 0)
      return {};
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

std::vector<std::string> child_process::stdout_lines() {
  char buf[4096];
  for (ssize_t n; (n = ::read(out_fd_, buf, sizeof(buf))) > 0;)
    buffer_.append(buf, static_cast<size_t>(n));
  for (size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
    stdout_lines_.push_back(buffer_.substr(0, nl));
    buffer_.erase(0, nl + 1);
  }
  if (!buffer_.empty())
    stdout_lines_.push_back(std::exchange(buffer_, {}));
  return stdout_lines_;
}

void child_process::signal(int sig) {
  if (pid_ > 0)
    ::kill(pid_, sig);
}

int child_process::wait() {
  if (pid_ <= 0)
    return -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR)
    ;
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ready_field(const std::string& line, const std::string& name) {
  auto key = " " + name + "=";
  auto at = line.find(key);
  if (at == std::string::npos)
    return {};
  auto from = at + key.size();
  return line.substr(from, line.find(' ', from) - from);
}

namespace {

std::vector<std::string> with(std::vector<std::string> argv,
                              const std::vector<std::string>& extra) {
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

} // namespace

broker_process::broker_process(const std::string& log_path,
                               const std::vector<std::string>& extra)
    : process_(with({eventforge_binary(), "broker"}, extra), log_path),
      brokers_(ready_field(process_.await_line("ready"), "kafka")) {
  // nop
}

std::string broker_process::fault(const std::string& command) {
  process_.write_line(command);
  return process_.await_line("fault ", std::chrono::seconds(10));
}

std::vector<std::string> serve_command(const std::string& dsn,
                                       const std::string& brokers,
                                       const std::vector<std::string>& extra) {
  std::vector<std::string> argv{eventforge_binary(),
                                "serve",
                                "--http.port=0",
                                "--database.url=" + dsn,
                                "--kafka.brokers=" + brokers,
                                "--kafka.session-timeout-ms=6000",
                                "--kafka.fetch-wait-max-ms=20"};
  // A test may ask for its own log level (an option is taken once).
  if (std::none_of(extra.begin(), extra.end(), [](const std::string& a) {
        return a.rfind("--log.level=", 0) == 0;
      }))
    argv.push_back("--log.level=" + test_log_level());
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

} // namespace ef::test
