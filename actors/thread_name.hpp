#pragma once

#include <caf/all.hpp>

#include <pthread.h>

#include <string>

namespace ef {

/// Names the thread of a blocking (detached) actor, e.g. "ef-relay-2", so
/// `top -H`, perf and /proc/<pid>/task/*/comm tell which actor spends the
/// CPU and the context switches. Linux keeps the first 15 bytes. Called from
/// the actor's behavior factory, which CAF runs on the actor's own thread
/// for a detached actor; a scheduled actor shares CAF's workers, whose names
/// stay.
inline void name_blocking_thread(caf::scheduled_actor* self,
                                 const std::string& name) {
  if (!self->getf(caf::abstract_actor::is_detached_flag))
    return;
  auto shown = ("ef-" + name).substr(0, 15);
  ::pthread_setname_np(::pthread_self(), shown.c_str());
}

} // namespace ef
