#pragma once

// The HTTP server's state and its connections, shared by server.cpp (the
// listener: accept, reject past max_connections, start, stop) and
// session.cpp (one connection: read, limits, dispatch, write, keep-alive).
// Private to app/http.

#include "app/http/server.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

namespace ef::app::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using clock = std::chrono::steady_clock;

struct server::impl {
  router routes;
  server_limits limits;
  server_events events;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  net::steady_timer accept_timer{ioc};
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};

  /// Open while the server runs. A handler may answer long after its
  /// connection closed and even after the server stopped (an actor whose
  /// request timed out late): its responder holds only this gate and a weak
  /// reference to the session, and writes nothing once the gate is shut. It
  /// also releases that session under the gate, so a session is never
  /// destroyed after the io_context whose strand it uses.
  struct gate {
    std::mutex mtx;
    bool open = true;
  };
  std::shared_ptr<gate> replies = std::make_shared<gate>();

  class session;
  mutable std::mutex sessions_mtx;
  std::set<std::shared_ptr<session>> sessions;
  /// Connections being answered 503 past max_connections; bounded, since
  /// each holds a descriptor.
  std::atomic<size_t> rejecting{0};
  /// Accepting is paused after an accept error (until accept_timer fires).
  std::atomic<bool> accept_paused{false};
  std::string last_accept_error; ///< guarded by sessions_mtx
  /// Rate limit of the accept error log: one line per 10 s, with a count.
  clock::time_point next_error_log{};
  long errors_not_logged = 0;

  impl(router r, server_limits l, server_events e)
      : routes(std::move(r)), limits(l), events(std::move(e)) {}

  void accept();
  void on_accept_error(const beast::error_code& ec);
  void reject(tcp::socket socket);
  void report_open();
  size_t open() const {
    std::lock_guard<std::mutex> guard{sessions_mtx};
    return sessions.size();
  }
};

class server::impl::session
    : public std::enable_shared_from_this<server::impl::session> {
public:
  session(tcp::socket socket, impl* owner)
      : stream_(std::move(socket)), owner_(owner) {
    stream_.socket().set_option(tcp::no_delay(true));
  }

  void start();

  /// Called on stop: an idle connection closes now; a busy one after its
  /// response (which then says Connection: close).
  void shut();

private:
  using parser_t = bhttp::request_parser<bhttp::string_body>;

  void read_header();
  void on_header(beast::error_code ec);
  void read_body();
  void dispatch();
  void fail(int status, const std::string& message, const std::string& field);
  void respond(response r);
  void close();

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<parser_t> parser_;
  impl* owner_; ///< outlives every session: its io_context owns them
  std::string label_ = "other";
  clock::time_point started_ = clock::now();
  unsigned version_ = 11;
  long served_ = 0;
  bool keep_alive_ = true;
  bool busy_ = false;
  bool closing_ = false;
};

} // namespace ef::app::http
