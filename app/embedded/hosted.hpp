#pragma once

// What a runtime hosts, for EventForge's own tools (chaos, bench, serve's
// broker scenarios): the private cluster and the in-process broker
// themselves. A host sees only runtime::hosts_broker() and hosts_database().

#include "kafka/embedded_broker.hpp"
#include "persistence/embedded_postgres.hpp"
#include <eventforge/embedded/runtime.hpp>

#include <memory>

namespace ef::app {

struct runtime::hosted {
  /// Null unless this process hosts the database.
  std::unique_ptr<persistence::embedded_postgres> pg;
  /// Null unless this process hosts the broker.
  std::unique_ptr<kafka::embedded_broker> broker;
};

/// The in-process broker of `rt`, or null if this process does not host it.
inline kafka::embedded_broker* hosted_broker(runtime& rt) {
  return rt.services().broker.get();
}

} // namespace ef::app
