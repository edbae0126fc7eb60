#pragma once

#include <caf/error.hpp>
#include <caf/response_promise.hpp>

#include <utility>

namespace ef {

/// A response promise that is always kept. CAF 0.17 drops a promise that
/// is destroyed undelivered without a word, and its requester waits for
/// ever (or until its own timeout). This one, destroyed while still pending
/// (its actor failed or was stopped between taking the request and
/// answering it), delivers the error set for that case, which the holder
/// updates as the request moves on ("nothing was written" while it waits,
/// "the outcome is unknown" once its transaction may have committed).
class kept_promise {
public:
  kept_promise() = default;

  kept_promise(caf::response_promise promise, caf::error if_dropped)
      : promise_(std::move(promise)), if_dropped_(std::move(if_dropped)) {
    // nop
  }

  kept_promise(kept_promise&& other) noexcept
      : promise_(std::exchange(other.promise_, caf::response_promise{})),
        if_dropped_(std::move(other.if_dropped_)) {
    // nop
  }

  kept_promise& operator=(kept_promise&& other) noexcept {
    if (this != &other) {
      drop();
      promise_ = std::exchange(other.promise_, caf::response_promise{});
      if_dropped_ = std::move(other.if_dropped_);
    }
    return *this;
  }

  kept_promise(const kept_promise&) = delete;
  kept_promise& operator=(const kept_promise&) = delete;

  ~kept_promise() { drop(); }

  /// Answers the request; later calls (and the destructor) do nothing.
  template <class... Ts>
  void deliver(Ts&&... xs) {
    if (promise_.pending())
      promise_.deliver(std::forward<Ts>(xs)...);
  }

  /// What the requester gets if this promise goes unanswered from now on.
  void if_dropped(caf::error e) { if_dropped_ = std::move(e); }

  bool pending() const { return promise_.pending(); }

private:
  void drop() {
    if (promise_.pending())
      promise_.deliver(std::move(if_dropped_));
  }

  caf::response_promise promise_;
  caf::error if_dropped_;
};

} // namespace ef
