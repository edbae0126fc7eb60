#include "actors/supervisor.hpp"

#include "actors/crash_log.hpp"
#include "actors/member_control.hpp"
#include "messages/tree_messages.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/dlq_messages.hpp>
#include <eventforge/messages/order_messages.hpp>

namespace ef {

void supervisor_state::start(size_t index) {
  auto& c = children[index];
  c.restarts.began(self->clock().now());
  c.current = c.spec.spawn(self);
  report_down();
}

void supervisor_state::report_down() {
  double down = 0;
  for (auto& c : children)
    down += c.current ? 0 : 1;
  ctx->metrics->set("actors_down", {{"supervisor", label}}, down);
}

void supervisor_state::stop(caf::error reason) {
  stopping = std::move(reason);
  // A child that receives an exit message unlinks from its sender first,
  // so its end reaches us as a down message, not as a linked exit.
  for (auto& c : children)
    if (c.current) {
      self->monitor(c.current);
      self->send_exit(c.current, *stopping);
    }
  quit_when_empty();
}

void supervisor_state::on_stopped_child(const caf::actor_addr& source) {
  for (auto& c : children)
    if (c.current && c.current.address() == source)
      c.current = caf::actor{};
  quit_when_empty();
}

void supervisor_state::quit_when_empty() {
  for (auto& c : children)
    if (c.current)
      return;
  self->quit(*stopping);
}

bool supervisor_state::on_child_exit(const caf::exit_msg& em) {
  for (size_t i = 0; i < children.size(); ++i) {
    auto& c = children[i];
    if (!c.current || c.current.address() != em.source)
      continue;
    c.current = caf::actor{};
    report_down();
    if (stopping) {
      quit_when_empty();
      return true;
    }
    if (em.reason == caf::exit_reason::normal) {
      ef::log::info("{}: {} finished", label, c.spec.name);
      return true;
    }
    if (is_control_exit(em.reason)) {
      // An operator's pause or resume: no crash, started again at once
      // (the new member consumes or waits as the control says).
      ef::log::info("{}: {} {}; starting it again", label, c.spec.name,
                    self->system().render(em.reason));
      c.last_crash = em.reason;
      self->send(self, restart_atom::value, static_cast<std::uint64_t>(i));
      return true;
    }
    c.last_crash = em.reason;
    auto delay = rules->on_crash(c.spec.kind, c.spec.name, em.reason,
                                 self->system().render(em.reason), c.restarts,
                                 self->clock().now());
    self->delayed_send(self, delay, restart_atom::value,
                       static_cast<std::uint64_t>(i));
    return true;
  }
  return false;
}

caf::result<drain_report> supervisor_state::drain() {
  std::vector<const child*> live;
  for (auto& c : children)
    if (c.current)
      live.push_back(&c);
  if (live.empty())
    return drain_report{true, {}};
  auto rp = self->make_response_promise<drain_report>();
  // One report for all children: each answer (or its absence) adds to it,
  // and the last one delivers it.
  auto report = std::make_shared<drain_report>(drain_report{true, {}});
  auto left = std::make_shared<size_t>(live.size());
  auto leaf_timeout =
    std::chrono::milliseconds(ctx->cfg.shutdown.drain_timeout_ms);
  auto answered = [rp, report, left]() mutable {
    if (--*left == 0)
      rp.deliver(*report);
  };
  for (auto* c : live) {
    auto name = c->spec.name;
    // A sub-supervisor waits for its own children's timeouts first: given a
    // second more, its report names the descendant that hung.
    auto timeout = leaf_timeout + (c->spec.kind == "supervisor"
                                     ? drain_grace_per_level
                                     : std::chrono::milliseconds(0));
    self->request(c->current, timeout, drain_atom::value)
      .then(
        [=](drain_report& r) mutable {
          if (!r.drained) {
            report->drained = false;
            if (r.not_drained.empty())
              report->not_drained.push_back(name + ": did not drain");
            for (auto& n : r.not_drained)
              report->not_drained.push_back(name + "/" + n);
          }
          answered();
        },
        [=](caf::error& err) mutable {
          report->drained = false;
          report->not_drained.push_back(
            name + ": " +
            (err == caf::sec::request_timeout
               ? "no answer within " + std::to_string(timeout.count()) + " ms"
               : self->system().render(err)));
          answered();
        });
  }
  return rp;
}

caf::actor supervisor_state::next_on(const std::string& route) {
  for (size_t n = 0; n < children.size(); ++n) {
    auto& c = children[next_router++ % children.size()];
    if (c.spec.route == route && c.current)
      return c.current;
  }
  return {};
}

supervisor_actor::behavior_type
supervisor(supervisor_actor::stateful_pointer<supervisor_state> self,
           std::string name, std::vector<child_spec> children,
           context_ptr ctx) {
  log_crashes(self, name);
  auto& st = self->state;
  st.self = self;
  st.label = std::move(name);
  st.rules.emplace(ctx->cfg, ctx->metrics, st.label);
  st.ctx = std::move(ctx);
  for (auto& spec : children)
    st.children.push_back({std::move(spec), {}, st.rules->new_backoff(), {}});
  for (size_t i = 0; i < st.children.size(); ++i)
    st.start(i);
  self->set_exit_handler([self](caf::exit_msg& em) {
    auto& st = self->state;
    if (!st.on_child_exit(em) && !st.stopping)
      st.stop(em.reason); // from whoever owns us: shut down
  });
  self->set_down_handler([self](caf::down_msg& dm) {
    if (self->state.stopping)
      self->state.on_stopped_child(dm.source);
  });
  return {
    // Commands go down their route; the actor at the end answers.
    [=](create_order& cmd) {
      return self->state.pass_on<order_api, order_accepted>("orders", cmd);
    },
    [=](cancel_order& cmd) {
      return self->state.pass_on<order_api, cancel_accepted>("orders", cmd);
    },
    [=](get_order& cmd) {
      return self->state.pass_on<order_api, order_view>("orders", cmd);
    },
    [=](dlq_command& cmd) {
      // Reads go to a desk of their own where this subtree has one, so
      // they never wait behind a replay's publish.
      auto route = is_read(cmd.verb) && self->state.next_on("dlq-reads")
                     ? "dlq-reads"
                     : "dlq";
      return self->state.pass_on<dlq_api, dlq_reply>(route, cmd);
    },
    [=](restart_atom, std::uint64_t index) {
      auto& c = self->state.children[index];
      if (!c.current && !self->state.stopping) {
        ef::log::info("{}: starting {} again", self->state.label, c.spec.name);
        self->state.start(index);
        if (!is_control_exit(c.last_crash)) // a pause is no recovery
          journal_restart(*self->state.ctx, c.spec.name, c.last_crash,
                          self->state.label + " restarted " + c.spec.name +
                            " after " + to_string(c.last_crash));
      }
    },
    [=](stats_atom) -> counter_map {
      return self->state.ctx->metrics->snapshot();
    },
    [=](drain_atom) -> caf::result<drain_report> {
      return self->state.drain();
    },
    [=](children_atom) {
      child_map live;
      for (auto& c : self->state.children)
        if (c.current)
          live.emplace(c.spec.name, c.current);
      return live;
    },
  };
}

} // namespace ef
