#pragma once

#include "actors/context.hpp"
#include "messages/order_messages.hpp"
#include "persistence/order_store.hpp"

#include <caf/all.hpp>

#include <optional>
#include <string>

namespace ef {

/// One API worker: executes order commands against its own connection, one
/// transaction per command. Blocking (libpq), hence spawned detached.
struct api_worker_state {
  context_ptr ctx;
  std::optional<persistence::order_store> store;
  caf::result<order_accepted> create(const create_order& cmd);
  caf::result<cancel_accepted> cancel(const cancel_order& cmd);
  caf::result<order_view> view(const get_order& cmd);
  static inline const char* name = "api";
};

caf::behavior api_worker(caf::stateful_actor<api_worker_state>* self,
                         context_ptr ctx);

} // namespace ef
