// The recovery page's routes: its files, the live overview, the failure
// scenarios it lists and runs, and one order's trace. All but the files
// and the list read the database or the broker, so they run on the
// blocking pool, never on an I/O thread.

#include "app/http/frontend_impl.hpp"
#include "messages/ids.hpp"

#include <nlohmann/json.hpp>

namespace ef::app {

using json = nlohmann::json;

void http_frontend::impl::overview_route(request& req, responder done) {
  auto refusal = scenario_refusal(req);
  blocking_call(done, [this, refusal] {
    auto body = view.overview();
    body["scenarios_allowed"] = refusal.empty();
    body["readonly_reason"] = refusal;
    return response::json(200, body.dump());
  });
}

/// The scenarios this process can run (a Kafka scenario needs the
/// in-process cluster), and whether this caller may run them.
void http_frontend::impl::scenarios_route(request& req, responder done) {
  auto refusal = scenario_refusal(req);
  json list = json::array();
  for (auto& s : scenarios())
    if (unavailable(s, broker).empty())
      list.push_back({{"name", s.name},
                      {"title", s.title},
                      {"point", s.point ? to_string(*s.point) : ""},
                      {"explain", s.explain},
                      {"expect",
                       {{"logical_events", 1},
                        {"deliveries", s.deliveries},
                        {"business_changes", s.business_changes}}}});
  done(response::json(200, json{{"allowed", refusal.empty()},
                                {"readonly_reason", refusal},
                                {"scenarios", list}}
                             .dump()));
}

void http_frontend::impl::run_scenario_route(request& req, responder done) {
  auto* s = find_scenario(req.params.at("name"));
  if (!s)
    return done(response::error(404, "no such scenario", "name"));
  auto refusal = scenario_refusal(req);
  if (!refusal.empty())
    return done(response::error(403, "scenario runs are off: " + refusal));
  if (auto cross = cross_site_refusal(req); !cross.empty())
    return done(response::error(
      403, "scenario refused: " + cross + "; nothing was run", "Origin"));
  blocking_call(done, [this, s] {
    auto started = runner->start(*s);
    if (auto* busy = std::get_if<scenario_refused>(&started))
      return response::error(409, busy->why, "name");
    if (auto* why = std::get_if<std::string>(&started))
      return response::error(503, *why);
    auto& run = std::get<scenario_run>(started);
    return response::json(202, json{{"scenario", s->name},
                                    {"order_id", run.order_id},
                                    {"trace_id", run.trace_id},
                                    {"node", runner->node()},
                                    {"armed_on", run.armed_on}}
                                 .dump());
  });
}

void http_frontend::impl::trace_route(request& req, responder done) {
  auto id = req.params.at("id");
  if (!is_uuid(id))
    return done(response::error(404, "no such order", "order_id"));
  blocking_call(done, [this, id] {
    auto t = view.trace(id);
    if (!t)
      return response::error(404, "no such order", "order_id");
    return response::json(200, t->dump());
  });
}

} // namespace ef::app
