#pragma once

#include <csignal>

namespace ef::app {

/// Blocks the shutdown signals (SIGINT, SIGTERM) in every thread; call it
/// before any thread starts, so that wait_for_shutdown() receives them
/// synchronously instead of a handler interrupting whatever thread runs.
sigset_t block_shutdown_signals();

/// Waits for one of `set`'s signals and returns its number.
int wait_for_shutdown(const sigset_t& set);

} // namespace ef::app
