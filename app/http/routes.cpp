// The HTTP API's route table: every route once, its method, its pattern
// (also the metric label) and the handler that answers it. The handlers
// live with their group: order_routes, admin_routes, consumer_routes,
// page_routes, health_routes.

#include "app/http/frontend_impl.hpp"
#include "app/page/assets.hpp"

namespace ef::app {

namespace {

/// A DLQ entry's routes: one handler, told the verb.
const std::tuple<const char*, const char*, dlq_verb> dlq_entry_routes[] = {
  {"GET", "/admin/dlq/{id}", dlq_verb::show},
  {"POST", "/admin/dlq/{id}/replay", dlq_verb::replay},
  {"POST", "/admin/dlq/{id}/discard", dlq_verb::discard},
};

/// The page's files, as compiled in: no state, no blocking.
http::handler asset_handler(const page_asset& asset) {
  return [&asset](http::request&, http::responder done) {
    http::response res;
    res.content_type = std::string(asset.content_type);
    res.body = std::string(asset.body);
    res.headers.emplace_back("Cache-Control", "no-cache");
    done(std::move(res));
  };
}

} // namespace

http::router http_frontend::impl::routes() {
  struct row {
    const char* method;
    const char* pattern;
    void (impl::*handle)(request&, responder);
  };
  // In the order the router tries them (and /metrics lists their labels).
  static const row order_and_admin_routes[] = {
    {"POST", "/orders", &impl::create_order_route},
    {"POST", "/orders/{id}/cancel", &impl::cancel_order_route},
    {"GET", "/orders/{id}", &impl::get_order_route},
    {"GET", "/admin/dlq", &impl::dlq_list_route},
    {"GET", "/admin/dlq/groups", &impl::dlq_groups_route},
    {"POST", "/admin/dlq/groups/{group}/replay", &impl::dlq_group_replay_route},
    {"GET", "/admin/consumers", &impl::consumers_route},
    {"POST", "/admin/consumers/{name}/pause", &impl::consumer_pause_route},
    {"POST", "/admin/consumers/{name}/resume", &impl::consumer_resume_route},
  };
  static const row page_and_health_routes[] = {
    {"GET", "/overview", &impl::overview_route},
    {"GET", "/scenarios", &impl::scenarios_route},
    {"POST", "/scenarios/{name}", &impl::run_scenario_route},
    {"GET", "/orders/{id}/trace", &impl::trace_route},
    {"GET", "/metrics", &impl::metrics_route},
    {"GET", "/readyz", &impl::readyz_route},
    {"GET", "/healthz", &impl::healthz_route},
  };
  http::router r;
  auto add = [&](const row& row) {
    r.add(
      {row.method, row.pattern,
       [this, handle = row.handle](http::request& req, http::responder done) {
         (this->*handle)(req, std::move(done));
       }});
  };
  for (auto& row : order_and_admin_routes)
    add(row);
  for (auto [method, pattern, verb] : dlq_entry_routes)
    r.add({method, pattern,
           [this, verb = verb](http::request& req, http::responder done) {
             dlq_entry_route(verb, req, std::move(done));
           }});
  for (auto& asset : page_assets())
    r.add({"GET", std::string(asset.path), asset_handler(asset)});
  for (auto& row : page_and_health_routes)
    add(row);
  return r;
}

} // namespace ef::app
