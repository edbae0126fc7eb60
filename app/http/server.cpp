#include "app/http/server.hpp"

#include <eventforge/config/logging.hpp>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <set>
#include <thread>

namespace ef::app::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using clock = std::chrono::steady_clock;

// -- request / response / router -------------------------------------------

namespace {

bool iequals(const std::string& a, const std::string& b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  size_t from = 1; // paths start with '/'
  while (from <= path.size()) {
    auto slash = path.find('/', from);
    out.push_back(path.substr(from, slash - from));
    if (slash == std::string::npos)
      break;
    from = slash + 1;
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Percent-decodes a query component ('+' is a space); nullopt if malformed.
std::optional<std::string> decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size())
        return std::nullopt;
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0)
        return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

} // namespace

const std::string* request::header(const std::string& name) const {
  for (auto& [k, v] : headers)
    if (iequals(k, name))
      return &v;
  return nullptr;
}

std::optional<std::string> request::query_param(const std::string& name) const {
  size_t from = 0;
  while (from <= query.size() && !query.empty()) {
    auto amp = query.find('&', from);
    auto part = query.substr(from, amp - from);
    auto eq = part.find('=');
    if (decode(part.substr(0, eq)) == name) {
      if (eq == std::string::npos)
        return std::string{};
      // A malformed escape comes back raw, so that validation refuses it.
      auto raw = part.substr(eq + 1);
      return decode(raw).value_or(raw);
    }
    if (amp == std::string::npos)
      break;
    from = amp + 1;
  }
  return std::nullopt;
}

response response::json(int status, std::string body) {
  response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

response response::error(int status, const std::string& message,
                         const std::string& field) {
  nlohmann::json body{{"error", message}};
  if (!field.empty())
    body["field"] = field;
  // A message may quote what a client sent: never let bytes that are not
  // UTF-8 turn an answer into an exception.
  return json(status, body.dump(-1, ' ', false,
                                nlohmann::json::error_handler_t::replace));
}

void router::add(route r) {
  auto segments = split_path(r.pattern);
  routes_.push_back({std::move(r), std::move(segments)});
}

router::match router::find(const std::string& method,
                           const std::string& path) const {
  match m;
  m.label = "other";
  auto segments = split_path(path);
  for (auto& c : routes_) {
    if (c.segments.size() != segments.size())
      continue;
    std::map<std::string, std::string> params;
    bool fits = true;
    for (size_t i = 0; i < segments.size() && fits; ++i) {
      auto& want = c.segments[i];
      if (want.size() > 2 && want.front() == '{' && want.back() == '}')
        fits =
          !segments[i].empty() &&
          params.emplace(want.substr(1, want.size() - 2), segments[i]).second;
      else
        fits = want == segments[i];
    }
    if (!fits)
      continue;
    m.label = c.r.pattern;
    if (c.r.method == method) {
      m.found = &c.r;
      m.params = std::move(params);
      return m;
    }
    m.allowed.push_back(c.r.method);
  }
  return m;
}

std::vector<std::string> router::labels() const {
  std::vector<std::string> out;
  for (auto& c : routes_)
    if (std::find(out.begin(), out.end(), c.r.pattern) == out.end())
      out.push_back(c.r.pattern);
  return out;
}

// -- the server -------------------------------------------------------------

namespace {

const std::set<std::string>& known_methods() {
  static const std::set<std::string> all{"GET",     "HEAD",    "POST",
                                         "PUT",     "DELETE",  "PATCH",
                                         "OPTIONS", "CONNECT", "TRACE"};
  return all;
}

} // namespace

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

  void start() {
    net::dispatch(stream_.get_executor(),
                  [self = shared_from_this()] { self->read_header(); });
  }

  /// Called on stop: an idle connection closes now; a busy one after its
  /// response (which then says Connection: close).
  void shut() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      if (!self->busy_)
        self->close();
    });
  }

private:
  using parser_t = bhttp::request_parser<bhttp::string_body>;

  void read_header() {
    if (closing_ || owner_->stopping)
      return close();
    parser_.emplace();
    parser_->header_limit(
      static_cast<std::uint32_t>(owner_->limits.max_header_bytes));
    parser_->body_limit(owner_->limits.max_body_bytes);
    // Waiting for the next request on a kept-alive connection is "idle";
    // the first request, and one already begun, get the header timeout.
    stream_.expires_after(served_ > 0 && buffer_.size() == 0
                            ? owner_->limits.idle_timeout
                            : owner_->limits.header_timeout);
    bhttp::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) {
        self->on_header(ec);
      });
  }

  void on_header(beast::error_code ec) {
    started_ = clock::now();
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::eof ||
        ec == net::error::connection_reset)
      return close();
    if (ec == bhttp::error::header_limit)
      return fail(431, "request headers too large", "headers");
    // Beast compares Content-Length with the body limit as the header ends:
    // the oversized body is refused before a byte of it is read.
    if (ec == bhttp::error::body_limit)
      return fail(413, "request body too large", "body");
    if (ec)
      return fail(400, "malformed HTTP request: " + ec.message(), "request");
    auto& req = parser_->get();
    if (static_cast<size_t>(std::distance(req.begin(), req.end())) >
        owner_->limits.max_header_fields)
      return fail(431, "too many header fields", "headers");
    if (known_methods().count(std::string(req.method_string())) == 0)
      return fail(501, "method not implemented", "method");
    // Refuse an oversized body before reading it.
    if (auto length = parser_->content_length();
        length && *length > owner_->limits.max_body_bytes)
      return fail(413, "request body too large", "body");
    auto expect = req[bhttp::field::expect];
    if (!expect.empty()) {
      if (!beast::iequals(expect, "100-continue"))
        return fail(417, "only Expect: 100-continue is supported", "Expect");
      if (!parser_->is_done()) {
        auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(
          bhttp::status::continue_, req.version());
        stream_.expires_after(owner_->limits.write_timeout);
        return bhttp::async_write(
          stream_, *cont,
          [self = shared_from_this(), cont](beast::error_code ec, size_t) {
            if (ec)
              return self->close();
            self->read_body();
          });
      }
    }
    read_body();
  }

  void read_body() {
    if (parser_->is_done())
      return dispatch();
    stream_.expires_after(owner_->limits.body_timeout);
    bhttp::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) {
        if (ec == bhttp::error::body_limit)
          return self->fail(413, "request body too large", "body");
        if (ec == beast::error::timeout ||
            ec == net::error::operation_aborted ||
            ec == bhttp::error::end_of_stream || ec == net::error::eof)
          return self->close();
        if (ec)
          return self->fail(400, "malformed HTTP request body: " + ec.message(),
                            "body");
        self->dispatch();
      });
  }

  void dispatch() {
    auto msg = parser_->release();
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    request req;
    req.method = std::string(msg.method_string());
    auto target = std::string(msg.target());
    auto q = target.find('?');
    req.path = target.substr(0, q);
    req.query = q == std::string::npos ? "" : target.substr(q + 1);
    for (auto& f : msg)
      req.headers.emplace_back(std::string(f.name_string()),
                               std::string(f.value()));
    req.body = std::move(msg.body());
    auto m = owner_->routes.find(req.method, req.path);
    label_ = m.label;
    busy_ = true;
    if (!m.found) {
      if (m.allowed.empty())
        return respond(response::error(404, "no such route"));
      std::string allow;
      for (auto& a : m.allowed)
        allow += (allow.empty() ? "" : ", ") + a;
      auto r =
        response::error(405, "method not allowed; allowed: " + allow, "method");
      r.headers.emplace_back("Allow", allow);
      return respond(std::move(r));
    }
    req.params = std::move(m.params);
    // The handler may answer later from another thread: hop back onto this
    // connection's executor to write, unless the server stopped meanwhile
    // (see impl::gate).
    std::weak_ptr<session> weak = shared_from_this();
    m.found->run(req, [weak, replies = owner_->replies](response r) {
      std::lock_guard<std::mutex> guard{replies->mtx};
      if (!replies->open)
        return;
      if (auto self = weak.lock())
        net::post(
          self->stream_.get_executor(),
          [self, r = std::move(r)]() mutable { self->respond(std::move(r)); });
    });
  }

  void fail(int status, const std::string& message, const std::string& field) {
    // The connection's framing can no longer be trusted: answer and close.
    keep_alive_ = false;
    busy_ = true;
    label_ = "other";
    respond(response::error(status, message, field));
  }

  void respond(response r) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
      static_cast<bhttp::status>(r.status), version_ ? version_ : 11);
    res->set(bhttp::field::server, "eventforge");
    res->set(bhttp::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers)
      res->set(k, v);
    res->body() = std::move(r.body);
    bool keep = keep_alive_ && !closing_ && !owner_->stopping;
    res->keep_alive(keep);
    res->prepare_payload();
    auto status = r.status;
    stream_.expires_after(owner_->limits.write_timeout);
    bhttp::async_write(
      stream_, *res,
      [self = shared_from_this(), res, keep, status](beast::error_code ec,
                                                     size_t) {
        self->busy_ = false;
        ++self->served_;
        if (self->owner_->events.response)
          self->owner_->events.response(
            self->label_, status,
            std::chrono::duration<double>(clock::now() - self->started_)
              .count());
        if (ec || !keep)
          return self->close();
        self->read_header();
      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
    {
      std::lock_guard<std::mutex> guard{owner_->sessions_mtx};
      owner_->sessions.erase(shared_from_this());
    }
    owner_->report_open();
  }

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
