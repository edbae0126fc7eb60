// The HTTP server's listener (Boost.Beast): accepting on a few threads,
// connections past http.max-connections answered 503, accept errors
// paused and counted, start and a graceful stop. Each connection is a
// session (session.cpp).

#include "app/http/server_impl.hpp"

#include <eventforge/config/logging.hpp>

#include <algorithm>
#include <array>
#include <cerrno>

namespace ef::app::http {

namespace {

/// The answer to a connection past http.max-connections, written before its
/// request is read.
const std::string& saturated_response() {
  static const std::string body =
    R"({"error":"the server is at http.max-connections; retry shortly",)"
    R"("field":"connection","written":false})";
  static const std::string all =
    "HTTP/1.1 503 Service Unavailable\r\nServer: eventforge\r\n"
    "Content-Type: application/json\r\nRetry-After: 1\r\n"
    "Connection: close\r\nContent-Length: " +
    std::to_string(body.size()) + "\r\n\r\n" + body;
  return all;
}

/// The symbolic name of an accept error, for logs and the metric label.
std::string error_name(const beast::error_code& ec) {
  switch (ec.value()) {
  case EMFILE:
    return "EMFILE";
  case ENFILE:
    return "ENFILE";
  case ENOBUFS:
    return "ENOBUFS";
  case ENOMEM:
    return "ENOMEM";
  case ECONNABORTED:
    return "ECONNABORTED";
  case EPERM:
    return "EPERM";
  case EPROTO:
    return "EPROTO";
  default:
    return "other";
  }
}

/// Most connections answered 503 at once; beyond it a connection is closed
/// without an answer (each one being answered holds a descriptor).
constexpr size_t max_rejecting = 64;

} // namespace

void server::impl::report_open() {
  if (events.open_connections)
    events.open_connections(open());
}

void server::impl::on_accept_error(const beast::error_code& ec) {
  auto name = error_name(ec);
  if (events.accept_error)
    events.accept_error(name);
  auto what = name + " (" + ec.message() + ")";
  {
    std::lock_guard<std::mutex> guard{sessions_mtx};
    last_accept_error = what;
  }
  auto now = clock::now();
  if (now < next_error_log) {
    ++errors_not_logged;
    return;
  }
  next_error_log = now + std::chrono::seconds(10);
  ef::log::warn("http: accepting a connection failed: {}{}; pausing {} ms, "
                "then accepting again",
                what,
                errors_not_logged > 0
                  ? " (and " + std::to_string(errors_not_logged) +
                      " more since the last report)"
                  : std::string{},
                limits.accept_pause.count());
  errors_not_logged = 0;
}

void server::impl::reject(tcp::socket socket) {
  if (events.rejected)
    events.rejected();
  if (rejecting.load() >= max_rejecting) {
    beast::error_code ignored;
    socket.close(ignored);
    return;
  }
  ++rejecting;
  // Answer, stop sending, then read (and drop) what the client sends until
  // it closes or a second passes: closing with unread bytes would reset the
  // connection and could destroy the answer before the client reads it.
  struct rejection {
    beast::tcp_stream stream;
    std::array<char, 1024> sink{};
    impl* owner;
    explicit rejection(tcp::socket s, impl* o)
        : stream(std::move(s)), owner(o) {}
    ~rejection() {
      beast::error_code ignored;
      stream.socket().close(ignored);
      --owner->rejecting;
    }
    static void drain(std::shared_ptr<rejection> r) {
      r->stream.async_read_some(net::buffer(r->sink),
                                [r](beast::error_code ec, size_t) {
                                  if (!ec)
                                    drain(r);
                                });
    }
  };
  auto r = std::make_shared<rejection>(std::move(socket), this);
  r->stream.expires_after(std::chrono::seconds(1));
  net::async_write(r->stream, net::buffer(saturated_response()),
                   [r](beast::error_code ec, size_t) {
                     if (ec)
                       return;
                     beast::error_code ignored;
                     r->stream.socket().shutdown(tcp::socket::shutdown_send,
                                                 ignored);
                     rejection::drain(r);
                   });
}

void server::impl::accept() {
  acceptor.async_accept(
    net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (stopping)
        return; // closed: stop accepting
      if (ec) {
        // Out of descriptors or buffers, or a connection aborted before it
        // was accepted: never a reason to stop listening. Pause, then
        // accept again; the kernel's backlog holds clients meanwhile.
        on_accept_error(ec);
        accept_paused = true;
        accept_timer.expires_after(limits.accept_pause);
        accept_timer.async_wait([this](beast::error_code) {
          accept_paused = false;
          if (!stopping)
            accept();
        });
        return;
      }
      std::shared_ptr<session> s;
      {
        std::lock_guard<std::mutex> guard{sessions_mtx};
        if (sessions.size() < limits.max_connections) {
          s = std::make_shared<session>(std::move(socket), this);
          sessions.insert(s);
        }
      }
      if (s) {
        report_open();
        s->start();
      } else {
        reject(std::move(socket));
      }
      accept();
    });
}

std::string server::saturation() const {
  auto n = impl_->open();
  if (n >= impl_->limits.max_connections)
    return "all " + std::to_string(impl_->limits.max_connections) +
           " connections (http.max-connections) are in use";
  if (impl_->accept_paused) {
    std::lock_guard<std::mutex> guard{impl_->sessions_mtx};
    return "accepting paused after an accept error: " +
           impl_->last_accept_error;
  }
  return {};
}

server::server(router routes, server_limits limits, observer on_response)
    : server(std::move(routes), limits,
             server_events{std::move(on_response), {}, {}, {}}) {
  // nop
}

server::server(router routes, server_limits limits, server_events events)
    : impl_(
        std::make_unique<impl>(std::move(routes), limits, std::move(events))) {
  // nop
}

server::~server() {
  stop();
}

int server::start(const std::string& host, int port) {
  auto& a = impl_->acceptor;
  beast::error_code ec;
  tcp::endpoint ep{net::ip::make_address(host, ec),
                   static_cast<unsigned short>(port)};
  if (!ec)
    a.open(ep.protocol(), ec);
  if (!ec)
    a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec)
    a.bind(ep, ec);
  if (!ec)
    a.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("cannot bind HTTP to " + host + ":" +
                             std::to_string(port) + ": " + ec.message());
  impl_->accept();
  for (int i = 0; i < std::max(1, impl_->limits.threads); ++i)
    impl_->threads.emplace_back([s = impl_.get()] { s->ioc.run(); });
  return a.local_endpoint().port();
}

void server::stop(std::chrono::milliseconds grace) {
  if (impl_->threads.empty() || impl_->stopping.exchange(true))
    return;
  net::post(impl_->ioc, [s = impl_.get()] {
    beast::error_code ignored;
    s->acceptor.close(ignored);
    s->accept_timer.cancel();
  });
  {
    std::lock_guard<std::mutex> guard{impl_->sessions_mtx};
    for (auto& s : impl_->sessions)
      s->shut();
  }
  // Requests in flight are answered; then the last session is gone.
  auto deadline = clock::now() + grace;
  for (;;) {
    {
      std::lock_guard<std::mutex> guard{impl_->sessions_mtx};
      if (impl_->sessions.empty())
        break;
    }
    if (clock::now() > deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  {
    // No late answer may touch a session from here on (impl::gate).
    std::lock_guard<std::mutex> guard{impl_->replies->mtx};
    impl_->replies->open = false;
  }
  impl_->ioc.stop();
  for (auto& t : impl_->threads)
    t.join();
  impl_->threads.clear();
  std::lock_guard<std::mutex> guard{impl_->sessions_mtx};
  impl_->sessions.clear();
}

} // namespace ef::app::http
