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
  std::lock_guard<std::mutex> guard{mtx_};
  auto now = std::chrono::steady_clock::now();
  if (probe_ && now - asked_ < max_age_)
    return last_;
  if (!probe_)
    probe_ = std::make_unique<broker_probe>(brokers_, topic_);
  std::vector<broker_probe::watermarks> marks;
  for (int p = 0; p < partitions_; ++p)
    marks.push_back(probe_->query_watermarks(p));
  std::vector<entry> out;
  for (auto& c : consumers_) {
    auto committed = probe_->committed("eventforge." + c, partitions_);
    for (int p = 0; p < partitions_; ++p) {
      auto& m = marks[static_cast<size_t>(p)];
      auto read = std::max(committed[static_cast<size_t>(p)], m.low);
      out.push_back({c, p, read, m.high - read});
    }
  }
  last_ = out;
  asked_ = now;
  return out;
}

} // namespace ef::kafka
