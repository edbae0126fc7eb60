#pragma once

#include "messages/tree_messages.hpp"
#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/control_messages.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <memory>

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

/// The behavior of an actor that works in rounds (relay, janitor, repairer,
/// gauge sampler): `State::round()` does one round and returns the delay
/// before the next (zero: at once). Rounds are self-sent messages, so exit
/// and drain messages are handled between them. A drain answers drained at
/// once, since between rounds such an actor holds nothing.
template <class State>
caf::behavior round_loop(caf::stateful_actor<State>* self,
                         on_drain policy = on_drain::stop_rounds) {
  auto stopped = std::make_shared<bool>(false);
  self->send(self, poll_atom::value);
  return {
    [=](drain_atom) {
      if (policy == on_drain::stop_rounds)
        *stopped = true;
      return drain_report{true, {}};
    },
    [=](poll_atom) {
      if (*stopped)
        return;
      auto delay = self->state.round();
      if (delay.count() == 0)
        self->send(self, poll_atom::value);
      else
        self->delayed_send(self, delay, poll_atom::value);
    },
  };
}

} // namespace ef
