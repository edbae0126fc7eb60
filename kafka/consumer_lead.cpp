#include "kafka/consumer_lead.hpp"

#include "kafka/broker_probe.hpp"

#include <algorithm>

namespace ef::kafka {

consumer_lead::consumer_lead(std::string brokers, std::string topic,
                             int partitions, std::vector<std::string> consumers,
                             std::chrono::milliseconds max_age)
    : brokers_(std::move(brokers)), topic_(std::move(topic)),
      partitions_(partitions), consumers_(std::move(consumers)),
      max_age_(max_age) {
  // nop
}

consumer_lead::~consumer_lead() = default;

std::vector<consumer_lead::entry> consumer_lead::current() {
  std::unique_lock<std::mutex> asking(ask_mtx_, std::try_to_lock);
  if (!asking) {
    // Another shard is asking the broker right now (or hangs in it:
    // librdkafka 2.0.2 can hang past its timeout once its broker went
    // away). Its last answer will do; before the first one, no lead is
    // known (nothing to wait for): the pacing starts with that answer.
    std::lock_guard<std::mutex> guard{data_mtx_};
    return last_;
  }
  auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> guard{data_mtx_};
    if (answered_ && now - asked_ < max_age_)
      return last_;
  }
  std::vector<entry> out;
  try {
    if (!probe_)
      probe_ = std::make_unique<broker_probe>(brokers_, topic_);
    std::vector<broker_probe::watermarks> marks;
    for (int p = 0; p < partitions_; ++p)
      marks.push_back(probe_->query_watermarks(p));
    for (auto& c : consumers_) {
      auto committed = probe_->committed("eventforge." + c, partitions_);
      for (int p = 0; p < partitions_; ++p) {
        auto& m = marks[static_cast<size_t>(p)];
        auto read = std::max(committed[static_cast<size_t>(p)], m.low);
        out.push_back({c, p, read, m.high - read});
      }
    }
  } catch (...) {
    // A client that failed is not trusted again (it may be attached to a
    // broker that went away): the next question gets a fresh one.
    probe_.reset();
    throw;
  }
  std::lock_guard<std::mutex> guard{data_mtx_};
  last_ = out;
  asked_ = now;
  answered_ = true;
  return out;
}

} // namespace ef::kafka
