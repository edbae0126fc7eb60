#pragma once

#include "config/backoff.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ef::persistence {

/// One line of the recovery journal (table recovery_journal). Empty strings
/// and negative positions are stored as NULL.
struct journal_line {
  /// broker: a Kafka fault a recovery-page scenario applied (a leader
  /// moved, brokers down and up again).
  enum class kind { crash, restart, suppressed, client_retry, broker };
  kind what = kind::crash;
  std::chrono::system_clock::time_point at = std::chrono::system_clock::now();
  std::string point;    ///< crash point name ("relay.after_ack_before_mark")
  std::string actor;    ///< who crashed or was restarted
  std::string consumer; ///< for consumer-side lines
  std::string order_id;
  std::string event_id;
  std::int32_t partition = -1;
  std::int64_t offset = -1;
  std::string detail;
};

const char* to_string(journal_line::kind k);

/// Writes journal lines from a background thread, so that the actor that
/// records a crash, a restart or a suppressed duplicate never waits for the
/// database (it may be the very thing that is down). Lines wait in a
/// bounded queue while the database is unreachable and are written when it
/// is back; past the bound the oldest are dropped and counted. Thread-safe.
class recovery_journal {
public:
  /// `retry` paces the writes while the database is unreachable.
  explicit recovery_journal(std::string dsn, size_t max_queued = 10000,
                            config::backoff_policy retry = {
                              std::chrono::milliseconds(200),
                              std::chrono::milliseconds(5000), 0.5,
                              std::chrono::milliseconds(0)});

  /// Writes what is queued (waiting up to `flush_timeout`), then stops.
  ~recovery_journal();

  recovery_journal(const recovery_journal&) = delete;
  recovery_journal& operator=(const recovery_journal&) = delete;

  /// Queues a line; never blocks on I/O.
  void record(journal_line line);

  /// Blocks until every line recorded before the call is written or
  /// `timeout` passes; true if written.
  bool flush(std::chrono::milliseconds timeout);

  /// Lines dropped because the queue was full (or the database refused
  /// them).
  std::uint64_t dropped() const;

  /// Called with the number of lines just dropped, from whichever thread
  /// dropped them, outside the journal's lock (a metric). Set it before the
  /// first record().
  void on_drop(std::function<void(std::uint64_t)> f);

private:
  void run();

  std::string dsn_;
  size_t max_queued_;
  config::backoff retry_;
  mutable std::mutex mtx_;
  std::condition_variable wake_;
  std::condition_variable written_;
  std::deque<journal_line> queue_;
  std::uint64_t recorded_ = 0; ///< lines accepted (dropped ones included)
  std::uint64_t done_ = 0;     ///< lines written or dropped
  std::uint64_t dropped_ = 0;
  bool stopping_ = false;
  std::function<void(std::uint64_t)> on_drop_;
  std::thread writer_;
};

/// Deletes up to `limit` journal lines older than `age_s` seconds.
long delete_journal_lines(const std::string& dsn, int age_s, int limit);

} // namespace ef::persistence
