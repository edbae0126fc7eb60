// How a group member stops consuming: for the tree's drain (everything
// fetched is applied and committed, then it answers and idles) and for an
// operator's pause (the same, then it leaves the group and waits, as a
// paused member, until the consumer is resumed; issue 42.5).

#include "actors/group_member.hpp"

#include "actors/crash_log.hpp"
#include "kafka/errors.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/atoms.hpp>

#include <unistd.h>

#include <atomic>

namespace ef {

using namespace std::chrono_literals;

namespace {
/// How often a paused member reports itself and reads the control.
constexpr auto paused_heartbeat = 1000ms;
} // namespace

const char* to_string(control_errc code) {
  switch (code) {
  case control_errc::none:
    return "none";
  case control_errc::paused:
    return "paused";
  case control_errc::resumed:
    return "resumed";
  }
  return "unknown";
}

std::string member_control::new_member_id(const std::string& node) {
  static std::atomic<std::uint64_t> incarnation{0};
  return node + "/" + std::to_string(::getpid()) + "/" +
         std::to_string(++incarnation);
}

member_control database_member_control(const std::string& dsn) {
  auto db = std::make_shared<persistence::consumer_controls>(dsn);
  member_control c;
  c.heartbeat = [db](const persistence::member_report& me) {
    return db->heartbeat(me);
  };
  c.leave = [db](const std::string& consumer, const std::string& member) {
    db->leave(consumer, member);
  };
  return c;
}

caf::typed_response_promise<drain_report> group_member_state::drain() {
  flow->begin_drain();
  for (auto& [p, s] : flow->slots())
    consumer->pause(p);
  drain_reply = self->make_response_promise<drain_report>();
  auto rp = *drain_reply;
  finish_drain();
  return rp;
}

void group_member_state::finish_drain() {
  if (!flow->idle())
    return;
  auto err = commit_done();
  if (pausing) {
    ef::log::info("{}: paused: every fetched record is applied{}; leaving "
                  "the group",
                  consumer_name,
                  err ? " (the offset commit failed: " + kafka::describe(err) +
                          "; the rest is read again after the resume)"
                      : " and committed");
    if (!stopping)
      stop(caf::make_error(control_errc::paused));
    return;
  }
  if (!drain_reply)
    return;
  if (err) {
    drain_reply->deliver(drain_report{
      false,
      {"every fetched record is applied, but the offset commit failed: " +
       kafka::describe(err)}});
  } else {
    ef::log::info("{}: drained: every fetched record is applied and committed",
                  consumer_name);
    drain_reply->deliver(drain_report{true, {}});
  }
  drain_reply.reset();
  flow->end_drain();
}

bool group_member_state::report_to_control(bool paused_member) {
  if (!control.heartbeat)
    return false;
  persistence::member_report me{
    consumer_name, member_id, ctx->cfg.node.name, paused_member, {}};
  if (flow)
    for (auto& [p, s] : flow->slots())
      me.partitions.push_back(p);
  bool paused = false;
  try {
    paused = control.heartbeat(me);
  } catch (const std::exception& e) {
    // The database is away: the member goes on as it is, and says so once.
    if (std::exchange(control_known, false))
      ef::log::warn("{}: cannot read the consumer's control ({}); going on "
                    "as {}",
                    consumer_name, e.what(),
                    paused_member ? "paused" : "consuming");
    return paused_member;
  }
  if (!std::exchange(control_known, true))
    ef::log::info("{}: the consumer's control answers again", consumer_name);
  ctx->metrics->set("consumer_paused", {{"consumer", consumer_name}},
                    paused ? 1 : 0);
  return paused;
}

void group_member_state::begin_pause() {
  ef::log::info("{}: paused by an operator: applying what is in flight, then "
                "leaving the group",
                consumer_name);
  pausing = true;
  flow->begin_drain();
  for (auto& [p, s] : flow->slots())
    consumer->pause(p);
  finish_drain();
}

void group_member_state::leave_members() {
  if (!control.leave)
    return;
  try {
    control.leave(consumer_name, member_id);
  } catch (const std::exception&) {
    // Its row ages out: status shows members seen lately only.
  }
}

caf::behavior paused_member(caf::stateful_actor<group_member_state>* self) {
  auto& st = self->state;
  ef::log::info("{}: consumer paused; waiting outside the group until it is "
                "resumed",
                st.consumer_name);
  self->set_exit_handler([self](caf::exit_msg& em) {
    self->state.leave_members();
    self->quit(em.reason);
  });
  self->send(self, poll_atom::value); // reported paused at once
  return {
    [=](poll_atom) {
      auto& st = self->state;
      if (st.report_to_control(true)) {
        self->delayed_send(self, paused_heartbeat, poll_atom::value);
        return;
      }
      ef::log::info("{}: consumer resumed; a new member joins the group",
                    st.consumer_name);
      st.leave_members();
      self->quit(caf::make_error(control_errc::resumed));
    },
    [=](drain_atom) {
      return drain_report{true, {}};
    },
    [=](children_atom) { return std::map<std::string, caf::actor>{}; },
  };
}

} // namespace ef
