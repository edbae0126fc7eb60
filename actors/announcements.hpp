#pragma once

#include "persistence/outbox_listener.hpp"

#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace ef {

/// A group member's inbox for the relays' announcements (which partition
/// got a record, at which offset) and for new broker epochs. The listener's
/// thread puts them in and wakes the member's poll; the member takes them out
/// on its own thread, where every pause and resume of its client happens.
class announcements : public persistence::published_sink {
public:
  using items = std::vector<std::pair<std::int32_t, std::int64_t>>;

  explicit announcements(std::function<void()> wake) : wake_(std::move(wake)) {}

  void published(std::int32_t partition, std::int64_t offset) override {
    std::lock_guard<std::mutex> guard{mtx_};
    pending_.emplace_back(partition, offset);
    if (wake_)
      wake_();
  }

  void epoch_began() override {
    std::lock_guard<std::mutex> guard{mtx_};
    epoch_news_ = true;
    if (wake_)
      wake_();
  }

  items take() {
    std::lock_guard<std::mutex> guard{mtx_};
    return std::exchange(pending_, {});
  }

  /// Whether a new broker epoch was announced since the last call.
  bool take_epoch_news() {
    std::lock_guard<std::mutex> guard{mtx_};
    return std::exchange(epoch_news_, false);
  }

  /// No wake-ups from now on: the client they go to is closing.
  void close() {
    std::lock_guard<std::mutex> guard{mtx_};
    wake_ = nullptr;
  }

private:
  std::mutex mtx_;
  std::function<void()> wake_;
  items pending_;
  bool epoch_news_ = false;
};

} // namespace ef
