#pragma once

#include "kafka/connection.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ef::kafka {

/// How many records each consumer group has yet to read per partition, as
/// the broker says: log end minus committed offset (the log start when the
/// group has none). Every relay shard of a process asks it while it
/// publishes (relay.max-lead-bytes); one question answers them all, and the
/// broker is asked at most once per `max_age` (each question is a request
/// per partition and group), by one caller at a time: the others take the
/// last answer meanwhile. Thread-safe; throws std::runtime_error when the
/// broker does not answer (the failed client is dropped).
///
/// Ages are bounded both ways. A question that has run for `stale_after`
/// (librdkafka 2.0.2 can hang past its timeout once its broker went away)
/// is given up: the next caller asks anew with a client of its own, and the
/// hung one's late answer is dropped. An answer older than `stale_after`
/// says nothing about now: no lead is known (nothing to wait for) until a
/// fresh one comes, so one hung question never holds every relay back. The
/// question runs on a thread of its own, and the caller that started it
/// waits at most `stale_after` too.
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
  ~consumer_lead();

  /// The lead of every consumer on every partition, at most `max_age` old;
  /// while another caller asks, its last answer if it is younger than
  /// `stale_after` (empty otherwise, and before the first).
  std::vector<entry> current();

  static constexpr std::chrono::milliseconds default_stale_after{10000};

private:
  /// The last answer if it is younger than stale_after_, else none.
  std::vector<entry> last_if_fresh(clock::time_point now) const;

  question_factory make_;
  clock_fn now_;
  std::chrono::milliseconds max_age_;
  std::chrono::milliseconds stale_after_;
  std::mutex mtx_; ///< guards everything below; never held while asking
  /// The client kept between questions; null while one asks with it, or
  /// after a question failed or was given up.
  std::unique_ptr<question> idle_;
  bool asking_ = false;
  clock::time_point asking_since_{};
  std::uint64_t generation_ = 0; ///< of the question whose answer counts
  std::vector<entry> last_;
  clock::time_point asked_{};
  bool answered_ = false;
};

} // namespace ef::kafka
