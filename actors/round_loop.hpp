#pragma once

#include "messages/tree_messages.hpp"
#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/control_messages.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

namespace ef {

/// What a drain does to an actor that works in rounds.
enum class on_drain {
  /// No round after the drain: the actor changes durable state (publishes,
  /// deletes, repairs), and a drain means that work must end.
  stop_rounds,
  /// Rounds go on: the actor only reads (the gauge sampler), and a drained
  /// tree that keeps running must still report what it holds.
  keep_rounds,
};

namespace detail {

/// Whether `st` still holds work begun in earlier rounds (the relay's
/// records in flight): `st.unfinished()` if the state declares one.
template <class State>
auto unfinished(const State& st, int) -> decltype(st.unfinished()) {
  return st.unfinished();
}
template <class State>
bool unfinished(const State&, long) {
  return false;
}

/// One round that only finishes earlier work: `st.finish_round()` if the
/// state declares one, else nothing is left to finish.
template <class State>
auto finish_round(State& st, int) -> decltype(st.finish_round()) {
  return st.finish_round();
}
template <class State>
std::chrono::milliseconds finish_round(State&, long) {
  return std::chrono::milliseconds{0};
}

} // namespace detail

/// The behavior of an actor that works in rounds (relay, janitor, repairer,
/// gauge sampler): `State::round()` does one round and returns the delay
/// before the next (zero: at once). Rounds are self-sent messages, so exit
/// and drain messages are handled between them. A drain answers drained at
/// once if the state holds nothing between rounds; a state that does (a
/// relay with records in flight, `unfinished()`) finishes it first with
/// `finish_round()`, which begins nothing new, and answers then.
template <class State>
caf::behavior round_loop(caf::stateful_actor<State>* self,
                         on_drain policy = on_drain::stop_rounds) {
  auto stopped = std::make_shared<bool>(false);
  auto waiting = std::make_shared<std::vector<caf::response_promise>>();
  self->send(self, poll_atom::value);
  return {
    [=](drain_atom) -> caf::result<drain_report> {
      if (policy == on_drain::keep_rounds)
        return drain_report{true, {}};
      *stopped = true;
      if (!detail::unfinished(self->state, 0))
        return drain_report{true, {}};
      waiting->push_back(self->make_response_promise());
      return caf::delegated<drain_report>{};
    },
    [=](poll_atom) {
      if (*stopped && !detail::unfinished(self->state, 0)) {
        for (auto& rp : std::exchange(*waiting, {}))
          rp.deliver(drain_report{true, {}});
        return;
      }
      auto delay =
        *stopped ? detail::finish_round(self->state, 0) : self->state.round();
      if (delay.count() == 0)
        self->send(self, poll_atom::value);
      else
        self->delayed_send(self, delay, poll_atom::value);
    },
  };
}

} // namespace ef
