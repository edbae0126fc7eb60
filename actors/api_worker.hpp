#pragma once

#include "actors/context.hpp"
#include "actors/kept_promise.hpp"
#include "messages/tree_messages.hpp"
#include "persistence/db_error.hpp"
#include "persistence/order_store.hpp"
#include <eventforge/messages/interfaces.hpp>

#include <caf/all.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ef {

/// What an API worker is built from: its order store and the wall clock
/// that deadlines are compared with (production_api_worker_deps), or fakes
/// in deterministic actor tests. The store is made when the worker starts;
/// it connects lazily, so a worker starts even while the database is down.
struct api_worker_deps {
  std::function<std::unique_ptr<persistence::order_book>()> store;
  /// Now, in milliseconds since the Unix epoch (the unit of deadlines).
  std::function<std::int64_t()> now_unix_ms;
};

api_worker_deps production_api_worker_deps(const context_ptr& ctx);

/// One API worker: executes order commands against its own connection.
/// Creates and cancels that arrive while a transaction runs are gathered and
/// committed together in the next one (group commit, up to api.batch-max);
/// each still gets its own answer, and one that fails never fails the
/// others. Blocking (libpq), hence spawned detached.
struct api_worker_state {
  /// A write command waiting for the next commit, with its reply channel.
  struct pending_write {
    std::variant<create_order, cancel_order> cmd;
    std::string order_id; ///< create only: IDs assigned on arrival
    std::string event_id;
    /// Answered whatever happens: a worker that stops holding it answers
    /// "nothing was written" while it waits, "outcome unknown" once its
    /// transaction began (flush).
    kept_promise reply;

    /// When its sender stops waiting, in ms since the Unix epoch; 0: never.
    std::int64_t deadline() const {
      return std::visit([](auto& c) { return c.deadline_unix_ms; }, cmd);
    }
  };
  using outcome =
    std::variant<persistence::create_result, persistence::cancel_result>;

  api_worker_actor::pointer self = nullptr;
  context_ptr ctx;
  api_worker_deps deps;
  std::unique_ptr<persistence::order_book> store;
  std::vector<pending_write> pending;
  bool flush_scheduled = false;

  void enqueue(pending_write w);
  /// Answers every command of `batch` whose deadline has passed with
  /// "nothing was written" and removes it; returns how many.
  size_t refuse_late(std::vector<pending_write>& batch);
  /// Commits everything pending in one transaction and answers each command.
  void flush();
  void answer(pending_write& w, const outcome& o);
  /// The answer to a command whose write failed with `e`: "its deadline
  /// passed" when that is why (counted), else the error's own mapping.
  caf::error failure_of(const pending_write& p, const persistence::db_error& e);
  caf::result<order_view> view(const get_order& cmd);
  static inline const char* name = "api";
};

api_worker_actor::behavior_type
api_worker(api_worker_actor::stateful_pointer<api_worker_state> self,
           context_ptr ctx);

/// The same actor, built from `deps`.
api_worker_actor::behavior_type
api_worker_with(api_worker_actor::stateful_pointer<api_worker_state> self,
                context_ptr ctx, api_worker_deps deps);

/// Maps a database failure to the API's error, logging the cause once.
/// Every answer but in_doubt's is a fact: nothing was written.
caf::error to_api_error(const persistence::db_error& e, const char* what);

} // namespace ef
