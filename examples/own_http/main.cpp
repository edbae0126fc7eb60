// A CAF application that serves HTTP itself (cpp-httplib) and places
// orders through EventForge's typed root: EventForge's own HTTP front and
// eventforge::http are not linked. Built against the installed package:
//   find_package(eventforge 1.1 CONFIG REQUIRED COMPONENTS core)
//
//   own_http --config-file=own_http.ini [--shop.orders=N] [--shop.port=P]
//
// POST /buy {"customer": "...", "sku": "...", "qty": n, "price_cents": n}
// answers 201 {"order_id": "..."}; an Idempotency-Key header makes a retry
// answer the first order. With shop.orders > 0 it buys that many times
// from itself, waits until everything is applied, verifies, and exits 0 if
// every invariant holds; with 0 it serves until stopped.

#include <eventforge/eventforge.hpp>

#include <caf/all.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

using namespace std::chrono_literals;

namespace {

class shop_config : public caf::actor_system_config {
public:
  shop_config() {
    ef::config::declare_options(custom_options_);
    ef::configure_actor_system(*this);
    opt_group{custom_options_, "shop"}
      .add(orders, "orders", "buy this many times from itself, then verify")
      .add(port, "port", "HTTP port (0: any free one)");
  }

  int orders = 30;
  int port = 0;
};

// [doc:own-http-route]
/// POST /buy: one typed request to EventForge's root per HTTP request. The
/// server's threads are not actors: a scoped_actor makes the request.
void serve_buy(caf::actor_system& sys, const ef::eventforge_actor& root,
               const httplib::Request& req, httplib::Response& res) {
  auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body["customer"].is_string() ||
      !body["sku"].is_string() || !body["qty"].is_number_integer() ||
      !body["price_cents"].is_number_integer()) {
    res.status = 400;
    res.set_content(R"({"error":"customer, sku, qty and price_cents"})",
                    "application/json");
    return;
  }
  ef::create_order cmd;
  cmd.customer_id = body["customer"];
  cmd.items = {{body["sku"], body["qty"], body["price_cents"]}};
  // The API actor computes the request's fingerprint: a reused key with
  // another body is refused exactly as EventForge's own front refuses it.
  cmd.idempotency_key = req.get_header_value("Idempotency-Key");
  caf::scoped_actor self{sys};
  self->request(root, 10s, std::move(cmd))
    .receive(
      [&](const ef::order_accepted& ok) {
        res.status = ok.replayed ? 200 : 201;
        res.set_content(nlohmann::json{{"order_id", ok.order_id}}.dump(),
                        "application/json");
      },
      [&](const caf::error& e) {
        // Validation and conflicts are the caller's; the rest is ours.
        res.status = e.category() == caf::atom("ef_api") ? 422 : 503;
        res.set_content(nlohmann::json{{"error", sys.render(e)}}.dump(),
                        "application/json");
      });
}
// [/doc:own-http-route]

} // namespace

int main(int argc, char** argv) {
  shop_config cfg;
  if (auto err = cfg.parse(argc, argv)) {
    std::cerr << "own_http: " << caf::to_string(err) << std::endl;
    return 2;
  }
  if (cfg.cli_helptext_printed)
    return 0;
  auto settings = ef::config::read_settings(cfg, cfg.config_file_path);
  if (!settings.ok()) {
    std::cerr << "own_http: " << settings.error << std::endl;
    return 2;
  }
  const auto& s = settings.value;
  // Serving until stopped: SIGINT and SIGTERM are waited for below, so
  // every thread (CAF's, the server's) starts with them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (cfg.orders == 0)
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  caf::actor_system sys{cfg};
  ef::instance eventforge{sys, s};

  httplib::Server server;
  auto root = eventforge.root();
  server.Post("/buy", [&](const httplib::Request& req, httplib::Response& res) {
    serve_buy(sys, root, req, res);
  });
  int port = cfg.port > 0 && server.bind_to_port("127.0.0.1", cfg.port)
               ? cfg.port
               : server.bind_to_any_port("127.0.0.1");
  std::thread listener([&] { server.listen_after_bind(); });
  std::cout << "own_http: serving on http://127.0.0.1:" << port << std::endl;

  bool ok = true;
  if (cfg.orders > 0) {
    httplib::Client client("127.0.0.1", port);
    int placed = 0;
    for (int i = 0; i < cfg.orders; ++i) {
      auto body = nlohmann::json{{"customer", "c" + std::to_string(i % 4)},
                                 {"sku", "mug"},
                                 {"qty", 1 + i % 3},
                                 {"price_cents", 1200}};
      httplib::Headers key{{"Idempotency-Key", "buy-" + std::to_string(i)}};
      // Each request twice: the retry answers the same order.
      auto first = client.Post("/buy", key, body.dump(), "application/json");
      auto retry = client.Post("/buy", key, body.dump(), "application/json");
      if (first && first->status == 201 && retry && retry->status == 200 &&
          nlohmann::json::parse(first->body)["order_id"] ==
            nlohmann::json::parse(retry->body)["order_id"])
        ++placed;
    }
    auto bad = client.Post("/buy", R"({"customer": 1})", "application/json");
    auto wait = ef::await_applied(s, eventforge.where(), 120s);
    auto verdict = ef::app::verify(s, eventforge.where().database_dsn,
                                   eventforge.where().kafka_brokers);
    std::cout << "own_http: placed " << placed << " of " << cfg.orders
              << " (each retried once), a bad body answered "
              << (bad ? bad->status : 0) << "\n"
              << ef::app::to_text(verdict);
    ok = placed == cfg.orders && bad && bad->status == 400 && wait.applied &&
         verdict.ok() && verdict.counts.orders == cfg.orders;
  } else {
    int sig = 0;
    sigwait(&stop_signals, &sig);
  }
  server.stop();
  listener.join();
  ok = eventforge.shutdown(30s) && ok;
  std::cout << "own_http: " << (ok ? "ok" : "FAILED") << std::endl;
  return ok ? 0 : 1;
}
