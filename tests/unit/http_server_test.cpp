// The HTTP server's lifetime rules, without the rest of EventForge.

#include "app/http/server.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>

#include <condition_variable>
#include <mutex>
#include <thread>

using namespace ef::app::http;

TEST_CASE("a_handler_that_answers_after_the_server_stopped_and_was_destroyed_"
          "writes_nothing_and_touches_nothing") {
  // The responder outlives the server, as an actor's reply that arrives
  // after its request timed out does (the ASan build checks every access).
  std::mutex mtx;
  std::condition_variable cv;
  std::optional<responder> held;
  router routes;
  routes.add({"GET", "/slow", [&](request&, responder done) {
                std::lock_guard<std::mutex> guard{mtx};
                held = std::move(done);
                cv.notify_all();
              }});
  auto srv = std::make_unique<server>(std::move(routes), server_limits{});
  auto port = srv->start("127.0.0.1", 0);
  std::thread client([port] {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(5, 0);
    (void)cli.Get("/slow"); // answered by nobody: the server stops
  });
  {
    std::unique_lock<std::mutex> lock{mtx};
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10),
                        [&] { return held.has_value(); }));
  }
  srv->stop(std::chrono::milliseconds(100));
  srv.reset();
  (*held)(response::json(200, "{}")); // late: dropped
  held.reset();                       // the last reference to the session
  client.join();
}
