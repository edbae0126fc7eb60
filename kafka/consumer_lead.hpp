#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ef::kafka {

class broker_probe;

/// How many records each consumer group has yet to read per partition, as
/// the broker says: log end minus committed offset (the log start when the
/// group has none). Every relay shard of a process asks it while it
/// publishes (relay.max-lead-bytes); one probe answers them all, and the
/// broker is asked at most once per `max_age` (each question is a request
/// per partition and group), by one caller at a time: the others take the
/// last answer meanwhile. Thread-safe; throws std::runtime_error when the
/// broker does not answer (the failed client is dropped).
class consumer_lead {
public:
  struct entry {
    std::string consumer;
    std::int32_t partition = 0;
    std::int64_t read = 0;  ///< the group's next offset to read
    std::int64_t ahead = 0; ///< records from there to the log end
  };

  consumer_lead(std::string brokers, std::string topic, int partitions,
                std::vector<std::string> consumers,
                std::chrono::milliseconds max_age);
  ~consumer_lead();

  /// The lead of every consumer on every partition, at most `max_age` old;
  /// while another caller asks, its last answer (empty before the first).
  std::vector<entry> current();

private:
  std::string brokers_;
  std::string topic_;
  int partitions_;
  std::vector<std::string> consumers_;
  std::chrono::milliseconds max_age_;
  /// Held while one caller asks the broker; probe_ is used only under it.
  std::mutex ask_mtx_;
  std::unique_ptr<broker_probe> probe_; ///< made at the first question
  std::mutex data_mtx_;                 ///< guards the answer below
  std::vector<entry> last_;
  std::chrono::steady_clock::time_point asked_{};
  bool answered_ = false;
};

} // namespace ef::kafka
