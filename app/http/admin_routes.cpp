// The admin routes: the DLQ (list, groups, show, replay, discard), each
// behind the admin token and answered by the tree's DLQ handler.

#include "app/http/frontend_impl.hpp"

#include <algorithm>
#include <iterator>

namespace ef::app {

namespace {

/// A DLQ entry id in a path: a positive integer, else 404.
std::optional<std::int64_t> entry_id(const http::request& req) {
  auto& text = req.params.at("id");
  if (text.empty() || text.size() > 18)
    return std::nullopt;
  std::int64_t id = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return std::nullopt;
    id = id * 10 + (c - '0');
  }
  return id > 0 ? std::optional<std::int64_t>{id} : std::nullopt;
}

} // namespace

void http_frontend::impl::dlq_list_route(request& req, responder done) {
  auto status = req.query_param("status").value_or("");
  if (status != "" &&
      std::none_of(std::begin(dlq_status::all), std::end(dlq_status::all),
                   [&](const char* s) { return status == s; }))
    return done(response::error(
      400, "must be parked, replaying, replayed or discarded", "status"));
  admin(req, done, {dlq_verb::list, 0, status, ""});
}

void http_frontend::impl::dlq_groups_route(request& req, responder done) {
  admin(req, done, {dlq_verb::groups, 0, "", ""});
}

/// POST /admin/dlq/groups/{group}/replay: the group's id as GET
/// /admin/dlq/groups gives it.
void http_frontend::impl::dlq_group_replay_route(request& req, responder done) {
  auto& group = req.params.at("group");
  if (group.empty() || group.size() > 64 ||
      !std::all_of(group.begin(), group.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      }))
    return done(response::error(404, "no such DLQ group", "group"));
  admin(req, done, {dlq_verb::replay_group, 0, group, ""});
}

/// GET /admin/dlq/{id}, POST .../replay and .../discard.
void http_frontend::impl::dlq_entry_route(dlq_verb verb, request& req,
                                          responder done) {
  auto id = entry_id(req);
  if (!id)
    return done(response::error(404, "no such DLQ entry", "id"));
  admin(req, done, {verb, *id, "", ""});
}

/// Runs `cmd` if the request carries the admin token, recording the
/// token's name as who did it.
void http_frontend::impl::admin(const request& req, responder done,
                                dlq_command cmd) {
  auto who = authorize(req);
  if (auto* refused = std::get_if<response>(&who))
    return done(std::move(*refused));
  cmd.actor = std::get<std::string>(who);
  auto w = cmd.verb == dlq_verb::replay_group ? writes::dlq_group
           : is_read(cmd.verb)                ? writes::nothing
                                              : writes::dlq_verb;
  ask<dlq_reply>(
    std::move(cmd), done,
    [](dlq_reply& r) { return response::json(200, r.json); }, w);
}

} // namespace ef::app
