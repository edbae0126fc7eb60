#pragma once

#include "messages/atoms.hpp"

#include <caf/all.hpp>

#include <chrono>

namespace ef {

/// The behavior of an actor that works in rounds (relay, janitor, repairer):
/// `State::round()` does one round and returns the delay before the next
/// (zero: at once). Rounds are self-sent messages, so exit and drain messages
/// are handled between them. A drain stops the loop and answers true at
/// once: between rounds such an actor holds nothing.
template <class State>
caf::behavior round_loop(caf::stateful_actor<State>* self) {
  self->send(self, poll_atom::value);
  return {
    [=](drain_atom) {
      self->state.draining = true;
      return true;
    },
    [=](poll_atom) {
      if (self->state.draining)
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
