#pragma once

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <exception>
#include <string>

namespace ef {

/// Makes an exception escaping a handler of `self` a logged actor failure
/// (reason sec::runtime_error) instead of CAF's default print to stdout,
/// which must carry only machine-readable lines. The supervisor then sees
/// the crash as an exit with that reason.
inline void log_crashes(caf::scheduled_actor* self, std::string who) {
  self->set_exception_handler(
      [who](caf::scheduled_actor*, std::exception_ptr& eptr) -> caf::error {
        try {
          std::rethrow_exception(eptr);
        } catch (const std::exception& e) {
          spdlog::error("{} crashed: {}", who, e.what());
        } catch (...) {
          spdlog::error("{} crashed: unknown exception", who);
        }
        return caf::make_error(caf::sec::runtime_error);
      });
}

} // namespace ef
