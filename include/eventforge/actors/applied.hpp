#pragma once

#include <eventforge/actors/eventforge.hpp>
#include <eventforge/config/settings.hpp>

#include <chrono>
#include <string>

namespace ef {

/// What still keeps the tree from having applied everything written so
/// far, read from durable state: outbox rows not yet published ("outbox: 1
/// unsent"), events a consumer has not marked ("processed_events: 5 marks
/// of 6"), or a group whose committed offset is short of a partition's log
/// end ("billing: partition 1 committed 3 of log end 4"). Empty once every
/// outbox row is published, every enabled consumer marked every event and
/// every group committed up to the log end: then `verify` reads a state
/// that no longer moves (until the next order). Throws if the database or
/// broker cannot be read.
std::string applied_gap(const config::settings& cfg, const endpoints& where);

/// The outcome of await_applied.
struct applied_wait {
  bool applied = false;
  /// The last gap seen (empty if applied): why it timed out.
  std::string gap;
};

/// Waits until applied_gap() is empty, reading it every `every`, for at
/// most `timeout`. For hosts and tools that want "everything so far is
/// applied" before they read or verify; the tree keeps running.
applied_wait
await_applied(const config::settings& cfg, const endpoints& where,
              std::chrono::milliseconds timeout,
              std::chrono::milliseconds every = std::chrono::milliseconds(100));

} // namespace ef
