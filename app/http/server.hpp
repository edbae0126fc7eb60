#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ef::app::http {

/// One request, as a handler sees it: parsed, size-checked, body complete.
struct request {
  std::string method; ///< "GET", "POST", ...
  std::string path;   ///< target without the query string
  std::string query;  ///< after '?', undecoded ("" if none)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::map<std::string, std::string> params; ///< from the route pattern

  /// Value of header `name` (case-insensitive), or nullptr if absent.
  const std::string* header(const std::string& name) const;
  /// Value of query parameter `name` (percent-decoded), or nullptr.
  std::optional<std::string> query_param(const std::string& name) const;
};

/// One response. Every error body is JSON {"error": ..., "field": ...}.
struct response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  static response json(int status, std::string body);
  static response error(int status, const std::string& message,
                        const std::string& field = {});
};

/// Completes a request. Call exactly once, from any thread (an actor's, a
/// blocking pool's): the server writes the response on the connection's own
/// executor.
using responder = std::function<void(response)>;
using handler = std::function<void(request&, responder)>;

/// One route: method, pattern ("/orders/{id}/cancel": literal segments and
/// {name} parameters), the label metrics use (the pattern itself, never an
/// ID), and the handler. The only place a route is declared.
struct route {
  std::string method;
  std::string pattern;
  handler run;
};

/// Finds the route of a request: the route and its parameters, or why none
/// fits (404, or 405 with the methods the path allows).
class router {
public:
  void add(route r);

  struct match {
    const route* found = nullptr;
    std::map<std::string, std::string> params;
    std::string label;                ///< the pattern, or "other"
    std::vector<std::string> allowed; ///< for 405 when !found
  };
  match find(const std::string& method, const std::string& path) const;

  /// Every route's pattern (the metric labels), once each.
  std::vector<std::string> labels() const;

private:
  struct compiled {
    route r;
    std::vector<std::string> segments; ///< "{name}" marks a parameter
  };
  std::vector<compiled> routes_;
};

/// Limits and timeouts of the server (defaults are the http.* settings').
struct server_limits {
  size_t max_header_bytes = 16 * 1024;
  size_t max_header_fields = 100;
  size_t max_body_bytes = 64 * 1024;
  /// From the first byte of a request to the end of its headers, and for the
  /// body: a client that trickles bytes is cut off, holding no thread.
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{10000};
  /// How long a kept-alive connection may wait for its next request.
  std::chrono::milliseconds idle_timeout{5000};
  std::chrono::milliseconds write_timeout{10000};
  int threads = 2;
  /// Connections served at once. One more is answered 503 and closed; the
  /// server keeps serving the ones it has and takes new ones as they close.
  size_t max_connections = 1024;
  /// How long accepting pauses after an accept error (EMFILE, ENFILE,
  /// ENOBUFS, ...): the backlog holds clients meanwhile, and a loop that
  /// retried at once would spin on a full descriptor table.
  std::chrono::milliseconds accept_pause{100};
};

/// What the server reports besides responses (all optional).
struct server_events {
  /// After each response is written: route label, status, seconds.
  std::function<void(const std::string&, int, double)> response;
  /// An accept failed; the name of the error ("EMFILE", ...). Accepting
  /// resumes after limits.accept_pause.
  std::function<void(const std::string&)> accept_error;
  /// A connection past max_connections was answered 503 and closed.
  std::function<void()> rejected;
  /// Connections open now (after each change).
  std::function<void(size_t)> open_connections;
};

/// Called after each response is written: route label, status, seconds.
using observer = std::function<void(const std::string&, int, double)>;

/// An HTTP/1.1 server (Boost.Beast on Asio) with event-driven I/O on a small
/// fixed number of threads: a connection holds a thread only while its bytes
/// are parsed or written, never while it idles, trickles, or waits for a
/// handler. Keep-alive and pipelining (one request at a time, answers in
/// order), Connection: close, Expect: 100-continue, chunked request bodies,
/// header/body/idle timeouts, caps on header size and count, 413 before an
/// oversized body is read, 404/405 (with Allow) in JSON.
class server {
public:
  server(router routes, server_limits limits, observer on_response = {});
  server(router routes, server_limits limits, server_events events);
  ~server();

  /// Binds and starts the threads; returns the bound port (0 = any).
  /// Throws std::runtime_error if the address cannot be bound.
  int start(const std::string& host, int port);

  /// Stops accepting and closes idle connections; requests in flight are
  /// answered (with Connection: close) for at most `grace`, then everything
  /// is closed and the threads are joined.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

  /// Why new connections are not served right now ("" if they are): every
  /// connection slot is taken, or accepting pauses after an accept error.
  std::string saturation() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ef::app::http
