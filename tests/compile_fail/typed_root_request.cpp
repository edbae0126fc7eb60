// Compiled by ctest, never linked: a host's request to the typed root is
// checked by the compiler. EF_CASE_ok must compile; each other case must be
// rejected for its own reason (tests/CMakeLists.txt matches the compiler's
// message), so the test cannot pass on an unrelated error.

#include <eventforge/messages/interfaces.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <string>

void host_asks(caf::event_based_actor* self, const ef::eventforge_actor& root) {
  constexpr auto timeout = std::chrono::seconds(1);
#if defined(EF_CASE_ok)
  self->request(root, timeout, ef::get_order{"an-order-id"})
    .then([](ef::order_view&) {});
  self->request(root, timeout, ef::dlq_command{ef::dlq_verb::list, 0, "", ""})
    .then([](ef::dlq_reply&) {});
  self->request(root, timeout, ef::drain_atom::value)
    .then([](ef::drain_report&) {});
#elif defined(EF_CASE_unknown_message)
  // Not in eventforge_actor: a plain string is no order command.
  self->request(root, timeout, std::string("place an order"));
#elif defined(EF_CASE_wrong_reply_handler)
  // create_order is answered with order_accepted, not cancel_accepted.
  self->request(root, timeout, ef::create_order{})
    .then([](ef::cancel_accepted&) {});
#else
#error "define EF_CASE_<name>"
#endif
}
