#pragma once

#include "kafka/connection.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ef::kafka {

/// How many records each consumer group has yet to read per partition, as
/// the broker says: log end minus committed offset (the log start when the
/// group has none). Every relay shard of a process asks it while it
/// publishes (relay.max-lead-bytes); one question answers them all, and the
/// broker is asked at most once per `max_age` (each question is a request
/// per partition and group). Thread-safe; current() throws
/// std::runtime_error when the broker did not answer its question (the
/// failed client is dropped).
///
/// One thread of its own asks, one question at a time, whatever the
/// outage's length: librdkafka 2.0.2 can hang in a watermark query past its
/// timeout once its broker went away, and a hung question then holds that
/// thread and its one client, nothing more. Callers only read: the one whose
/// call finds the answer due wakes the asking thread and waits at most
/// `stale_after` for it; while a question runs, every caller takes the last
/// answer if it is younger than `stale_after`, else no lead is known
/// (nothing to wait for), so a hung question never holds a relay back.
class consumer_lead {
public:
  struct entry {
    std::string consumer;
    std::int32_t partition = 0;
    std::int64_t read = 0;  ///< the group's next offset to read
    std::int64_t ahead = 0; ///< records from there to the log end
  };

  /// One question to the broker: the lead of every consumer on every
  /// partition. Throws when the broker does not answer.
  class question {
  public:
    virtual ~question() = default;
    virtual std::vector<entry> ask() = 0;
  };
  using question_factory = std::function<std::unique_ptr<question>()>;

  consumer_lead(connection cluster, std::string topic, int partitions,
                std::vector<std::string> consumers,
                std::chrono::milliseconds max_age,
                std::chrono::milliseconds stale_after = default_stale_after);

  using clock = std::chrono::steady_clock;
  using clock_fn = std::function<clock::time_point()>;

  /// With questions and a clock of the caller's making (tests).
  consumer_lead(question_factory make, std::chrono::milliseconds max_age,
                std::chrono::milliseconds stale_after, clock_fn now);
  /// Stops the asking thread; one hung in a question is left to end on its
  /// own (it owns what it uses), so a stop never waits for the broker.
  ~consumer_lead();
  consumer_lead(const consumer_lead&) = delete;
  consumer_lead& operator=(const consumer_lead&) = delete;

  /// The lead of every consumer on every partition, at most `max_age` old;
  /// while a question runs, the last answer if it is younger than
  /// `stale_after` (empty otherwise, and before the first).
  std::vector<entry> current();

  static constexpr std::chrono::milliseconds default_stale_after{10000};

private:
  struct shared;
  /// What the asking thread needs: it may outlive this object while hung.
  std::shared_ptr<shared> s_;
  std::thread asker_;
};

} // namespace ef::kafka
