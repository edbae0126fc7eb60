// Compiled into every executable only in the ThreadSanitizer build
// (-DEF_TSAN=ON). Every thread that runs an actor records its actor ID in
// CAF's logger (a map from thread ID to actor ID, caf::logger::aids_),
// under a spinlock made of atomics inside libcaf_core, which is not
// instrumented: TSan saw two detached actors' threads (a partition worker
// starting, an API worker) rehash that map "at the same time". The lock is
// real; these interposers tell TSan about it: entering either accessor
// acquires on the logger, leaving it releases, which is how TSan models a
// lock. See app/sanitizers/tsan_caf_mailbox.cpp for how interposing works.

#include "app/sanitizers/tsan_interpose.hpp"

#include <caf/logger.hpp>

#include <sanitizer/tsan_interface.h>

using ef::tsan::library_member;

namespace caf {

actor_id logger::thread_local_aid() {
  using fn = actor_id (logger::*)();
  static const auto library =
    library_member<fn>("_ZN3caf6logger16thread_local_aidEv");
  __tsan_acquire(this);
  auto result = (this->*library)();
  __tsan_release(this);
  return result;
}

actor_id logger::thread_local_aid(actor_id aid) {
  using fn = actor_id (logger::*)(actor_id);
  static const auto library =
    library_member<fn>("_ZN3caf6logger16thread_local_aidEm");
  __tsan_acquire(this);
  auto result = (this->*library)(aid);
  __tsan_release(this);
  return result;
}

} // namespace caf
