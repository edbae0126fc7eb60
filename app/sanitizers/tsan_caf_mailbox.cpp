// Compiled into every executable only in the ThreadSanitizer build
// (-DEF_TSAN=ON). CAF 0.17's mailboxes are lock-free queues inside
// libcaf_core, which is not instrumented: TSan does not see that a message
// built by the sender happens before the receiver reads it, and reports
// every value that travels in a message as a race. This file tells it, at
// exactly the boundary CAF synchronises: enqueueing a message releases on
// the receiving actor, and consuming (or dequeueing) one acquires on it;
// handling a message (or initialising) also releases when it ends, so the
// next message, perhaps on another worker thread, sees the actor's state.
//
// The CAF member functions below are interposed: these definitions, in the
// executable, come first in the dynamic linker's lookup, so libcaf_core's
// vtables and calls bind to them; each annotates, then calls the library's
// own definition (found with dlsym(RTLD_NEXT)).

#include "app/sanitizers/tsan_interpose.hpp"

#include <caf/all.hpp>
#include <caf/detail/sync_request_bouncer.hpp>

#include <sanitizer/tsan_interface.h>

using ef::tsan::library_member;

namespace caf {

void scheduled_actor::enqueue(mailbox_element_ptr ptr, execution_unit* eu) {
  using fn = void (scheduled_actor::*)(mailbox_element_ptr, execution_unit*);
  static const auto library = library_member<fn>(
    "_ZN3caf15scheduled_actor7enqueueESt10unique_ptrINS_15mailbox_"
    "elementENS_6detail8disposerEEPNS_14execution_unitE");
  __tsan_release(this);
  __tsan_release(ptr.get()); // the element, for cleanup's drain (below)
  (this->*library)(std::move(ptr), eu);
}

invoke_message_result scheduled_actor::consume(mailbox_element& x) {
  using fn = invoke_message_result (scheduled_actor::*)(mailbox_element&);
  static const auto library =
    library_member<fn>("_ZN3caf15scheduled_actor7consumeERNS_15mailbox_"
                       "elementE");
  __tsan_acquire(this);
  auto result = (this->*library)(x);
  __tsan_release(this);
  return result;
}

// Initialisation (make_behavior and what it sets up) runs here, on the
// thread that first resumes the actor; a later message may run on another.
bool scheduled_actor::activate(execution_unit* ctx) {
  using fn = bool (scheduled_actor::*)(execution_unit*);
  static const auto library = library_member<fn>(
    "_ZN3caf15scheduled_actor8activateEPNS_14execution_unitE");
  __tsan_acquire(this);
  auto result = (this->*library)(ctx);
  __tsan_release(this);
  return result;
}

// The first message of a lazily started actor, and a response the actor was
// waiting for, are delivered through these instead of consume().
scheduled_actor::activation_result
scheduled_actor::reactivate(mailbox_element& x) {
  using fn = activation_result (scheduled_actor::*)(mailbox_element&);
  static const auto library =
    library_member<fn>("_ZN3caf15scheduled_actor10reactivateERNS_15mailbox_"
                       "elementE");
  __tsan_acquire(this);
  auto result = (this->*library)(x);
  __tsan_release(this);
  return result;
}

scheduled_actor::activation_result
scheduled_actor::activate(execution_unit* ctx, mailbox_element& x) {
  using fn =
    activation_result (scheduled_actor::*)(execution_unit*, mailbox_element&);
  static const auto library =
    library_member<fn>("_ZN3caf15scheduled_actor8activateEPNS_14execution_"
                       "unitERNS_15mailbox_elementE");
  __tsan_acquire(this);
  auto result = (this->*library)(ctx, x);
  __tsan_release(this);
  return result;
}

// A terminating actor destroys the messages still in its mailbox here,
// messages it never consumed.
bool scheduled_actor::cleanup(error&& fail_state, execution_unit* host) {
  using fn = bool (scheduled_actor::*)(error&&, execution_unit*);
  static const auto library = library_member<fn>(
    "_ZN3caf15scheduled_actor7cleanupEONS_5errorEPNS_14execution_unitE");
  __tsan_acquire(this);
  return (this->*library)(std::move(fail_state), host);
}

// Likewise for a blocking actor (a scoped_actor) that ends with messages it
// never received, e.g. the timeouts of requests it no longer waits for,
// which the actor clock's thread enqueued.
bool blocking_actor::cleanup(error&& fail_state, execution_unit* host) {
  using fn = bool (blocking_actor::*)(error&&, execution_unit*);
  static const auto library = library_member<fn>(
    "_ZN3caf14blocking_actor7cleanupEONS_5errorEPNS_14execution_unitE");
  __tsan_acquire(this);
  return (this->*library)(std::move(fail_state), host);
}

void blocking_actor::enqueue(mailbox_element_ptr ptr, execution_unit* eu) {
  using fn = void (blocking_actor::*)(mailbox_element_ptr, execution_unit*);
  static const auto library = library_member<fn>(
    "_ZN3caf14blocking_actor7enqueueESt10unique_ptrINS_15mailbox_"
    "elementENS_6detail8disposerEEPNS_14execution_unitE");
  __tsan_release(this);
  __tsan_release(ptr.get()); // the element, for cleanup's drain (below)
  (this->*library)(std::move(ptr), eu);
}

// A blocking receive (scoped_actor's request().receive(), receive loops)
// consumes messages here, straight from the mailbox, not through dequeue().
intrusive::task_result
blocking_actor::mailbox_visitor::operator()(mailbox_element& x) {
  using fn = intrusive::task_result (mailbox_visitor::*)(mailbox_element&);
  static const auto library = library_member<fn>(
    "_ZN3caf14blocking_actor15mailbox_visitorclERNS_15mailbox_elementE");
  __tsan_acquire(self);
  auto result = (this->*library)(x);
  __tsan_release(self);
  return result;
}

mailbox_element_ptr blocking_actor::dequeue() {
  using fn = mailbox_element_ptr (blocking_actor::*)();
  static const auto library =
    library_member<fn>("_ZN3caf14blocking_actor7dequeueEv");
  auto result = (this->*library)();
  __tsan_acquire(this);
  return result;
}

// A terminating actor's cleanup acquires on it on entry, but closes and
// drains its mailbox only later: an element pushed in between is destroyed
// after this call (cleanup hands each one to the bouncer first) with no
// acquire after its push. CAF orders that push before the destruction by
// the mailbox's compare-exchanges (lifo_inbox::push_front, then close()'s
// take_head, both seq_cst); a push after close() fails and the sender
// destroys its element itself. So acquire on the element, which enqueue
// released on before pushing it. Found in issue 41: a request the root
// delegated to an API worker that was stopping (typed-root test); shown
// with a stand-alone reproducer (a detached actor quitting while another
// thread sends to it): a report in 5 of 5 runs without this, none with it.
namespace detail {
void sync_request_bouncer::operator()(const mailbox_element& e) const {
  using fn = void (sync_request_bouncer::*)(const mailbox_element&) const;
  static const auto library = library_member<fn>(
    "_ZNK3caf6detail20sync_request_bouncerclERKNS_15mailbox_elementE");
  __tsan_acquire(const_cast<mailbox_element*>(&e));
  (this->*library)(e);
}
} // namespace detail

} // namespace caf
