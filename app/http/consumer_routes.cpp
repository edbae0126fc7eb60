// The consumers' controls over HTTP (issue 42.5), behind the admin token:
// GET /admin/consumers (paused or not, members by node and partitions),
// POST /admin/consumers/{name}/pause and .../resume. Durable in the
// database, obeyed by every node's member; the same as `eventforge consumer`.

#include "actors/consumer_operations.hpp"
#include "app/http/frontend_impl.hpp"

namespace ef::app {

void http_frontend::impl::consumers_route(request& req, responder done) {
  auto who = authorize(req);
  if (auto* refused = std::get_if<response>(&who))
    return done(std::move(*refused));
  blocking_call(done, [this] {
    consumer_operations ops(cfg, where.database_dsn, kafka::connection{});
    return response::json(200, ops.overview().dump());
  });
}

void http_frontend::impl::consumer_pause_route(request& req, responder done) {
  consumer_control(req, std::move(done), true);
}

void http_frontend::impl::consumer_resume_route(request& req, responder done) {
  consumer_control(req, std::move(done), false);
}

void http_frontend::impl::consumer_control(request& req, responder done,
                                           bool paused) {
  auto who = authorize(req);
  if (auto* refused = std::get_if<response>(&who))
    return done(std::move(*refused));
  auto name = req.params.at("name");
  blocking_call(done, [this, name, paused, actor = std::get<std::string>(who)] {
    consumer_operations ops(cfg, where.database_dsn, kafka::connection{});
    if (auto why = ops.check_name(name); !why.empty())
      return response::error(404, why, "name");
    auto said = ops.set_paused(name, paused, actor);
    return response::json(
      200,
      nlohmann::json{{"consumer", name}, {"paused", paused}, {"said", said}}
        .dump());
  });
}

} // namespace ef::app
