// One connection of the HTTP server: a request's header and body read
// within their limits and timeouts, dispatched to its route, the answer
// written on the connection's own executor whenever the handler gives it,
// and the connection kept alive or closed.

#include "app/http/server_impl.hpp"

namespace ef::app::http {

namespace {

const std::set<std::string>& known_methods() {
  static const std::set<std::string> all{"GET",     "HEAD",    "POST",
                                         "PUT",     "DELETE",  "PATCH",
                                         "OPTIONS", "CONNECT", "TRACE"};
  return all;
}

} // namespace

void server::impl::session::start() {
  net::dispatch(stream_.get_executor(),
                [self = shared_from_this()] { self->read_header(); });
}

void server::impl::session::shut() {
  net::post(stream_.get_executor(), [self = shared_from_this()] {
    self->closing_ = true;
    if (!self->busy_)
      self->close();
  });
}

void server::impl::session::read_header() {
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

void server::impl::session::on_header(beast::error_code ec) {
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

void server::impl::session::read_body() {
  if (parser_->is_done())
    return dispatch();
  stream_.expires_after(owner_->limits.body_timeout);
  bhttp::async_read(
    stream_, buffer_, *parser_,
    [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec == bhttp::error::body_limit)
        return self->fail(413, "request body too large", "body");
      if (ec == beast::error::timeout || ec == net::error::operation_aborted ||
          ec == bhttp::error::end_of_stream || ec == net::error::eof)
        return self->close();
      if (ec)
        return self->fail(400, "malformed HTTP request body: " + ec.message(),
                          "body");
      self->dispatch();
    });
}

void server::impl::session::dispatch() {
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

void server::impl::session::fail(int status, const std::string& message,
                                 const std::string& field) {
  // The connection's framing can no longer be trusted: answer and close.
  keep_alive_ = false;
  busy_ = true;
  label_ = "other";
  respond(response::error(status, message, field));
}

void server::impl::session::respond(response r) {
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
          std::chrono::duration<double>(clock::now() - self->started_).count());
      if (ec || !keep)
        return self->close();
      self->read_header();
    });
}

void server::impl::session::close() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.socket().close(ignored);
  {
    std::lock_guard<std::mutex> guard{owner_->sessions_mtx};
    owner_->sessions.erase(shared_from_this());
  }
  owner_->report_open();
}

} // namespace ef::app::http
