// The order routes: POST /orders, POST /orders/{id}/cancel,
// GET /orders/{id}. Each is one request to the root actor; its reply, or
// its error, completes the HTTP request (no HTTP thread waits).

#include "actors/order_validation.hpp"
#include "app/http/frontend_impl.hpp"
#include "app/http/order_request.hpp"
#include "messages/ids.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <random>

namespace ef::app {

namespace {

using json = nlohmann::json;
using http::request;
using http::response;

/// Continues the caller's W3C trace context, or starts a new trace.
std::string traceparent_of(const request& req) {
  auto* h = req.header("traceparent");
  auto tp = h ? *h : std::string{};
  if (!tp.empty() && !validate_traceparent(tp))
    return tp;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[56];
  std::snprintf(buf, sizeof(buf), "00-%016llx%016llx-%016llx-01",
                static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

} // namespace

void http_frontend::impl::create_order_route(request& req, responder done) {
  auto key = req.header("Idempotency-Key");
  auto type = req.header("Content-Type");
  auto parsed =
    http::parse_order({type ? *type : "", std::move(req.body),
                       key ? std::optional<std::string>{*key} : std::nullopt});
  if (auto* refused = std::get_if<http::refusal>(&parsed))
    return done(
      response::error(refused->status, refused->message, refused->field));
  auto cmd = std::get<create_order>(std::move(parsed));
  cmd.traceparent = traceparent_of(req);
  ask<order_accepted>(
    std::move(cmd), done,
    [](order_accepted& a) {
      auto res = response::json(201, json{{"order_id", a.order_id},
                                          {"event_id", a.event_id},
                                          {"status", a.status}}
                                       .dump());
      if (a.replayed)
        res.headers.emplace_back("Idempotent-Replayed", "true");
      return res;
    },
    writes::create);
}

// A cancel carries no body (none is needed; RFC 9112 allows none).
void http_frontend::impl::cancel_order_route(request& req, responder done) {
  auto& id = req.params.at("id");
  if (!is_uuid(id))
    return done(response::error(404, "no such order", "order_id"));
  ask<cancel_accepted>(
    cancel_order{id, traceparent_of(req)}, done,
    [](cancel_accepted& a) {
      return response::json(
        202, json{{"order_id", a.order_id}, {"event_id", a.event_id}}.dump());
    },
    writes::cancel);
}

namespace {

/// "" (never happened) as JSON null, as the order document always had it.
json time_or_null(const std::string& t) {
  return t.empty() ? json(nullptr) : json(t);
}

/// GET /orders/{id}'s document: the typed view, field for field.
json order_json(const order_view& v) {
  json items = json::array();
  for (auto& i : v.items)
    items.push_back(
      {{"sku", i.sku}, {"qty", i.qty}, {"price_cents", i.price_cents}});
  json events = json::array();
  for (auto& e : v.events)
    events.push_back({{"event_id", e.event_id},
                      {"event_type", e.event_type},
                      {"seq", e.seq},
                      {"created_at", e.created_at},
                      {"sent_at", time_or_null(e.sent_at)},
                      {"publish_attempts", e.publish_attempts}});
  json effects = json::object();
  for (auto& [consumer, list] : v.effects) {
    auto& out = effects[consumer] = json::array();
    for (auto& x : list)
      out.push_back({{"event_id", x.event_id},
                     {"kind", x.kind},
                     {"amount_cents", x.amount_cents},
                     {"quantity", x.quantity},
                     {"applied_at", x.applied_at}});
  }
  return {{"order_id", v.order_id},
          {"customer_id", v.customer_id},
          {"status", v.status},
          {"total_cents", v.total_cents},
          {"created_at", v.created_at},
          {"updated_at", v.updated_at},
          {"cancel_requested_at", time_or_null(v.cancel_requested_at)},
          {"items", std::move(items)},
          {"events", std::move(events)},
          {"effects", std::move(effects)}};
}

} // namespace

void http_frontend::impl::get_order_route(request& req, responder done) {
  auto& id = req.params.at("id");
  if (!is_uuid(id))
    return done(response::error(404, "no such order", "order_id"));
  ask<order_view>(get_order{id}, done, [](order_view& v) {
    return response::json(200, order_json(v).dump());
  });
}

} // namespace ef::app
