#pragma once

// The HTTP front's state and its parts, shared by the files that implement
// it (private to app/http): frontend.cpp (construction, start, stop),
// routes.cpp (the route table), one file per group of handlers
// (order_routes, admin_routes, page_routes, health_routes), access_checks
// (who may ask what) and tree_answers (the tree's replies and errors as
// HTTP responses).

#include "app/http/server.hpp"
#include "app/page/recovery_view.hpp"
#include "app/page/scenarios.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/http/frontend.hpp>
#include <eventforge/messages/dlq_messages.hpp>
#include <eventforge/messages/order_messages.hpp>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <type_traits>
#include <variant>
#include <vector>

namespace ef::app {

namespace http {

/// What a request may have written, for the answer to a failure whose
/// outcome the front cannot know itself (docs/api-contract.md).
enum class writes {
  nothing,   ///< a read
  create,    ///< POST /orders: a keyed retry settles it
  cancel,    ///< POST /orders/{id}/cancel: reading the order settles it
  dlq_verb,  ///< admin replay or discard: reading the entry settles it
  dlq_group, ///< admin group replay: reading the group's entries settles it
};

/// Maps an error reply of the tree to an HTTP response (tree_answers.cpp).
/// Every 5xx says whether something was written: "written": false when the
/// tree knows nothing was, "outcome": "unknown" otherwise.
response error_response(const caf::error& err, writes w,
                        std::chrono::milliseconds waited);

/// Unix time in milliseconds `from_now` from now (a command's deadline).
std::int64_t unix_ms_in(std::chrono::milliseconds from_now);

/// How much longer than its deadline the front waits for a command's
/// answer: an API worker that cannot commit it in time rolls it back and
/// says so, and that answer needs a moment to arrive. Past this, the front
/// answers "outcome unknown" (only a COMMIT started before the deadline can
/// still be running).
constexpr std::chrono::milliseconds answer_grace{2000};

} // namespace http

struct http_frontend::impl {
  using request = http::request;
  using response = http::response;
  using responder = http::responder;
  using writes = http::writes;

  caf::actor_system& sys;
  eventforge_actor root;
  config::settings cfg;
  std::shared_ptr<telemetry> metrics;
  endpoints where;
  static constexpr int blocking_limit = 16;
  std::atomic<int> blocking_now{0};
  /// /readyz is computed at most once a second, on its own lane; callers
  /// meanwhile get the last answer (a probe every 100 ms costs one database
  /// session a second). The first callers wait for the first answer.
  std::mutex readiness_mtx;
  std::chrono::steady_clock::time_point readiness_at{};
  std::optional<response> readiness_cached;
  bool readiness_computing = false;
  std::vector<responder> readiness_waiters;
  std::unique_ptr<http::server> server;
  int port = 0;
  recovery_view view;
  std::unique_ptr<scenario_runner> runner; ///< null: no crash points
  /// /readyz and the recovery page block on the database and the broker:
  /// they run here, never on the I/O threads. At most `blocking_limit`
  /// calls wait or run at once; more are answered 503 at once, so a slow
  /// database cannot pile up requests without bound. Its tasks use `view`
  /// and `runner`: declared after them, it is joined before they go, and
  /// stop() joins it first of all (each task is bounded: a statement
  /// timeout, a cancelled scenario's last request).
  boost::asio::thread_pool blocking{2};
  /// /readyz's own lane: never behind the blocking pool's queue.
  boost::asio::thread_pool readiness_lane{1};

  impl(caf::actor_system& s, eventforge_actor r, const config::settings& c,
       std::shared_ptr<telemetry> m, endpoints w, std::shared_ptr<chaos> f,
       std::function<std::string(const std::string&)> bf);

  /// The in-process cluster's fault commands (Kafka scenarios), if any.
  broker_controls broker;

  /// `w` with the database's connect timeout, and a statement timeout of
  /// http.request-timeout-ms for every query the front runs itself (unless
  /// the DSN sets libpq options of its own): a probe, an overview or a
  /// trace gives up when the server is unreachable or a lock holds it,
  /// never hangs.
  static endpoints bounded(endpoints w, const config::settings& c);

  // -- who may ask what (access_checks.cpp) --------------------------------

  /// True if `host` (a Host header, "name:port") names this server: its
  /// bound port, and its bound address, or for a loopback address any
  /// loopback name. A wildcard address (0.0.0.0, ::) cannot tell its
  /// names: any is taken there, where only the admin token (which a page
  /// of another site cannot send) runs scenarios (demo mode needs loopback).
  bool own_host(const std::string& host) const;

  /// Why a request that changes state through the page may not come from
  /// where it does ("" if it may): another site's page (Origin,
  /// Sec-Fetch-Site), or a name of another server resolving to ours (DNS
  /// rebinding: its Host is that name).
  std::string cross_site_refusal(const request& req) const;

  /// Why this request may not run a scenario ("" if it may): they place
  /// orders and crash actors on purpose, so they need demo.enabled or the
  /// admin token.
  std::string scenario_refusal(const request& req);

  /// Checks the bearer token of an admin request; on success returns the
  /// token's name (recorded with the action), else the refusal.
  std::variant<std::string, response> authorize(const request& req);

  // -- running requests (frontend.cpp, and ask here) -----------------------

  /// Sends `cmd` to the tree; the reply (or the error, or the timeout)
  /// completes the request from the asking actor's thread. No HTTP thread
  /// waits for the tree. A command that writes carries its deadline
  /// (now + http.request-timeout-ms): the tree writes it by then or not at
  /// all, and the front waits answer_grace longer for the tree to say
  /// which.
  template <class Reply, class Command, class OnReply>
  void ask(Command cmd, responder done, OnReply on_reply,
           writes w = writes::nothing) {
    auto limit = std::chrono::milliseconds(cfg.http.request_timeout_ms);
    auto timeout = limit;
    if constexpr (std::is_same_v<Command, create_order> ||
                  std::is_same_v<Command, cancel_order>) {
      cmd.deadline_unix_ms = http::unix_ms_in(limit);
      timeout += http::answer_grace;
    }
    // A replay's publish is bounded by half of the limit (the DLQ desk's
    // producers); its database steps get the grace, as a command's do.
    if (w == writes::dlq_verb || w == writes::dlq_group)
      timeout += http::answer_grace;
    // The root goes in as a spawn argument: CAF 0.17 binds a reference to a
    // null argument tuple for an actor spawned without any (undefined
    // behaviour that UBSan reports).
    sys.spawn(
      [timeout, w, cmd = std::move(cmd), done, on_reply](
        caf::event_based_actor* self, const eventforge_actor& r) mutable {
        self->request(r, timeout, std::move(cmd))
          .then([=](Reply& reply) { done(on_reply(reply)); },
                [=](caf::error& err) {
                  done(http::error_response(err, w, timeout));
                });
      },
      root);
  }

  /// Runs `work` on the blocking pool, or answers 503 at once if
  /// `blocking_limit` calls already wait or run there.
  void blocking_call(responder done, std::function<response()> work);

  // -- the routes (routes.cpp) and their handlers --------------------------

  /// Every route, once: method, pattern (also the metric label), handler.
  http::router routes();

  // order_routes.cpp
  void create_order_route(request& req, responder done);
  void cancel_order_route(request& req, responder done);
  void get_order_route(request& req, responder done);

  // admin_routes.cpp: the DLQ, behind the admin token
  void dlq_list_route(request& req, responder done);
  void dlq_groups_route(request& req, responder done);
  void dlq_group_replay_route(request& req, responder done);
  void dlq_entry_route(dlq_verb verb, request& req, responder done);
  // -- consumers' controls (consumer_routes.cpp) ----------------------------
  void consumers_route(request& req, responder done);
  void consumer_pause_route(request& req, responder done);
  void consumer_resume_route(request& req, responder done);
  /// Pauses or resumes the consumer the path names, for the token's holder.
  void consumer_control(request& req, responder done, bool paused);
  void admin(const request& req, responder done, dlq_command cmd);

  // page_routes.cpp: the recovery page
  void overview_route(request& req, responder done);
  void scenarios_route(request& req, responder done);
  void run_scenario_route(request& req, responder done);
  void trace_route(request& req, responder done);

  // health_routes.cpp
  void metrics_route(request& req, responder done);
  void readyz_route(request& req, responder done);
  void healthz_route(request& req, responder done);
  /// The last readiness answer if it is younger than a second, else a new
  /// one (one caller computes it; the others wait for it).
  bool kafka_readiness(nlohmann::json& body,
                       std::vector<std::string>& degraded);
  response readiness();
};

} // namespace ef::app
