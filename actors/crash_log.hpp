#pragma once

#include "actors/chaos.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <exception>
#include <string>

namespace ef {

/// Error category of exits caused by an injected crash.
inline caf::atom_value chaos_error_category() {
  return caf::atom("ef_chaos");
}

/// Classifies an exit reason for restart counters: "injected" (a chaos crash
/// point), "exception" (any other exception), or CAF's name for the reason.
inline std::string reason_class(const caf::error& reason) {
  if (reason.category() == chaos_error_category())
    return "injected";
  if (reason == caf::sec::runtime_error)
    return "exception";
  return to_string(reason);
}

/// Makes an exception escaping a handler of `self` a logged actor failure
/// instead of CAF's default print to stdout, which must carry only
/// machine-readable lines. The supervisor sees the exit reason.
inline void log_crashes(caf::scheduled_actor* self, std::string who) {
  self->set_exception_handler(
    [who](caf::scheduled_actor*, std::exception_ptr& eptr) -> caf::error {
      try {
        std::rethrow_exception(eptr);
      } catch (const injected_crash& e) {
        spdlog::info("{}: {}", who, e.what());
        return caf::error{
          static_cast<std::uint8_t>(static_cast<int>(e.point) + 1),
          chaos_error_category()};
      } catch (const std::exception& e) {
        spdlog::error("{} crashed: {}", who, e.what());
      } catch (...) {
        spdlog::error("{} crashed: unknown exception", who);
      }
      return caf::make_error(caf::sec::runtime_error);
    });
}

} // namespace ef
