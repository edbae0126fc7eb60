#pragma once

#include "actors/chaos.hpp"
#include "actors/context.hpp"
#include "persistence/db_error.hpp"
#include <eventforge/config/logging.hpp>

#include <caf/all.hpp>

#include <exception>
#include <string>

namespace ef {

/// Error category of exits caused by an injected crash (chaos_errc).
inline caf::atom_value chaos_error_category() {
  return caf::detail::error_factory<chaos_errc>::category;
}

/// Error category of exits caused by a database outage: the code is the
/// persistence::db_errc (unavailable, or in_doubt: the session broke).
inline caf::atom_value db_error_category() {
  return caf::detail::error_factory<persistence::db_errc>::category;
}

/// True if `reason` is a database outage: the server could not be reached
/// or the session broke. Restarting the actor's parent cannot mend that, so
/// supervisors restart such a child with backoff for as long as the outage
/// lasts and never escalate it.
inline bool is_outage(const caf::error& reason) {
  return reason.category() == db_error_category();
}

/// Classifies an exit reason for restart counters: "injected" (a chaos crash
/// point), "db_unavailable" (a database outage), "exception" (any other
/// exception), or CAF's name for the reason.
inline std::string reason_class(const caf::error& reason) {
  if (reason.category() == chaos_error_category())
    return "injected";
  if (is_outage(reason))
    return "db_unavailable";
  if (reason == caf::sec::runtime_error)
    return "exception";
  return to_string(reason);
}

/// Makes an exception escaping a handler of `self` a logged actor failure
/// instead of CAF's default print to stdout, which must carry only
/// machine-readable lines (`ready`, `stopping`); the supervisor sees the
/// exit reason. So is a message `self` has no handler for (CAF prints
/// "*** unexpected message" to stdout): a warning in the log, and the
/// sender of a request gets CAF's unexpected_message error as before.
inline void log_crashes(caf::scheduled_actor* self, std::string who) {
  self->set_default_handler(
    [who](caf::scheduled_actor*,
          caf::message_view& x) -> caf::result<caf::message> {
      ef::log::warn("{}: unexpected message dropped: {}", who,
                    to_string(x.content()));
      return caf::sec::unexpected_message;
    });
  self->set_exception_handler(
    [who](caf::scheduled_actor*, std::exception_ptr& eptr) -> caf::error {
      try {
        std::rethrow_exception(eptr);
      } catch (const injected_crash& e) {
        ef::log::info("{}: {}", who, e.what());
        return caf::make_error(chaos_errc::injected_crash,
                               std::string(to_string(e.point)));
      } catch (const persistence::db_error& e) {
        using persistence::db_errc;
        if (e.code() == db_errc::unavailable || e.code() == db_errc::in_doubt) {
          // Info, not warn: during an outage this repeats at every restart;
          // the supervisor warns once per outage.
          ef::log::info("{}: database unavailable: {}", who, e.what());
          return caf::make_error(e.code());
        }
        ef::log::error("{} crashed: {}", who, e.what());
      } catch (const std::exception& e) {
        ef::log::error("{} crashed: {}", who, e.what());
      } catch (...) {
        ef::log::error("{} crashed: unknown exception", who);
      }
      return caf::make_error(caf::sec::runtime_error);
    });
}

/// Records in the recovery journal that `actor` was started again after it
/// exited with `why`; an injected crash names its crash point.
inline void journal_restart(const context& ctx, std::string actor,
                            const caf::error& why, std::string detail) {
  if (!ctx.journal)
    return;
  persistence::journal_line line;
  line.what = persistence::journal_line::kind::restart;
  line.actor = std::move(actor);
  // An injected crash carries its point's name (log_crashes).
  if (why.category() == chaos_error_category() &&
      why.context().match_elements<std::string>())
    line.point = why.context().get_as<std::string>(0);
  line.detail = std::move(detail);
  ctx.journal->record(std::move(line));
}

} // namespace ef
