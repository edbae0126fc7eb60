#include "bench/http_load.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>

namespace ef::bench {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using steady = std::chrono::steady_clock;
using beast::error_code;

constexpr auto connect_timeout = std::chrono::seconds(5);
// Like wrk's --timeout in bench/http_clients.sh: a stuck request must not
// hold its connection for the rest of the run.
constexpr auto request_timeout = std::chrono::seconds(10);
constexpr auto drain_cap = std::chrono::seconds(10);
constexpr auto retry_pause = std::chrono::milliseconds(100);

struct connection {
  explicit connection(net::io_context& ioc) : stream(ioc), retry(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  http::request<http::string_body> req;
  http::response<http::string_body> res;
  net::steady_timer retry;
  steady::time_point due; // latency origin of the request in flight
  bool tried = false;     // the first connect attempt has completed
};

/// All state lives on the io_context's one thread, so nothing is locked. The
/// run ends with ioc_.stop(), which drops the pending handlers: no timer is
/// ever cancelled, so their handlers need not look at the error code.
class generator {
public:
  explicit generator(const load_spec& spec) : spec_(spec) {}

  load_result run() {
    where_ = spec_.host + ":" + std::to_string(spec_.port);
    error_code ec;
    endpoints_ =
      tcp::resolver(ioc_).resolve(spec_.host, std::to_string(spec_.port), ec);
    if (ec)
      throw std::runtime_error("cannot resolve " + where_ + ": " +
                               ec.message());
    pending_connects_ = std::max(1, spec_.connections);
    for (int i = 0; i < pending_connects_; ++i)
      conns_.push_back(std::make_unique<connection>(ioc_));
    // Initiated here, completed on the io thread: starting it orders the two.
    for (auto& c : conns_)
      connect(*c);
    std::exception_ptr failure;
    std::thread io([&] {
      try {
        ioc_.run();
      } catch (...) { // only from the caller's body/progress callbacks
        failure = std::current_exception();
      }
      rusage self{};
      ::getrusage(RUSAGE_THREAD, &self);
      r_.generator_cpu_s = static_cast<double>(self.ru_utime.tv_sec) +
                           self.ru_utime.tv_usec / 1e6 +
                           static_cast<double>(self.ru_stime.tv_sec) +
                           self.ru_stime.tv_usec / 1e6;
      r_.generator_switches = self.ru_nvcsw + self.ru_nivcsw;
    });
    io.join();
    if (failure)
      std::rethrow_exception(failure);
    if (!any_up_)
      throw std::runtime_error("cannot connect to " + where_ + ": " +
                               first_error_);
    if (last_answer_ > start_)
      r_.seconds = std::chrono::duration<double>(last_answer_ - start_).count();
    return std::move(r_);
  }

private:
  void connect(connection& c) {
    c.stream.expires_after(connect_timeout);
    c.stream.async_connect(
      endpoints_,
      [this, &c](error_code ec, const tcp::endpoint&) { connected(c, ec); });
  }

  void connected(connection& c, error_code ec) {
    if (!ec) // small requests and answers: Nagle must not hold them back
      c.stream.socket().set_option(tcp::no_delay(true), ec);
    if (!ec) {
      c.stream.expires_never();
      any_up_ = true;
      idle(c);
    } else {
      if (first_error_.empty())
        first_error_ = ec.message();
      ++r_.transport_errors;
      c.stream.close();
      if (phase_ != phase::draining || !queue_.empty()) {
        c.retry.expires_after(retry_pause); // a refusing server: do not spin
        c.retry.async_wait([this, &c](error_code) { connect(c); });
      }
    }
    // The clock starts once every connection had its first try, so that the
    // connect storm of many connections is not measured as load.
    if (c.tried)
      return;
    c.tried = true;
    if (--pending_connects_ == 0) {
      if (any_up_)
        begin();
      else
        ioc_.stop(); // run() reports the failure
    }
  }

  /// The connection broke with a request in flight (lost, not retried), or
  /// the server announced it closes it after the answer.
  void lost(connection& c) {
    ++r_.transport_errors;
    --busy_;
    c.stream.close();
    c.buffer.clear(); // leftovers of the old connection would corrupt parsing
    if (phase_ != phase::draining || !queue_.empty())
      connect(c);
    check_done();
  }

  void begin() {
    phase_ = phase::running;
    start_ = steady::now(); // the first send, closed or open loop
    end_time_ = start_ + spec_.duration;
    end_.expires_at(end_time_);
    end_.async_wait([this](error_code) { drain(); });
    if (spec_.progress)
      report_progress();
    if (spec_.rate > 0)
      return tick();
    for (auto* c : std::exchange(idle_, {}))
      send(*c, steady::now());
  }

  void tick() {
    if (phase_ != phase::running)
      return;
    // Everything due, at once: a late timer must not thin out the schedule.
    schedule(steady::now());
    if (due(next_) >= end_time_)
      return;
    tick_.expires_at(due(next_));
    tick_.async_wait([this](error_code) { tick(); });
  }

  /// Sends, or queues if no connection is idle, the requests due by `until`.
  void schedule(steady::time_point until) {
    for (; due(next_) <= until && due(next_) < end_time_; ++next_) {
      if (idle_.empty()) {
        ++r_.late;
        queue_.push_back(due(next_));
        continue;
      }
      auto* c = idle_.back(); // the most recently used connection is warm
      idle_.pop_back();
      send(*c, due(next_));
    }
  }

  void idle(connection& c) {
    if (!queue_.empty()) {
      auto due = queue_.front();
      queue_.pop_front();
      send(c, due);
    } else if (phase_ == phase::running && spec_.rate <= 0) {
      send(c, steady::now());
    } else {
      idle_.push_back(&c);
    }
  }

  void send(connection& c, steady::time_point due) {
    c.req = {http::verb::post, spec_.target, 11};
    c.req.set(http::field::host, where_);
    c.req.set(http::field::content_type, "application/json");
    c.req.keep_alive(true);
    c.req.body() = spec_.body ? spec_.body(r_.sent) : "{}";
    c.req.prepare_payload();
    c.due = due;
    ++busy_;
    ++r_.sent;
    c.stream.expires_after(request_timeout); // covers the write and the read
    http::async_write(c.stream, c.req, [this, &c](error_code ec, std::size_t) {
      if (ec)
        return lost(c);
      c.res = {};
      http::async_read(
        c.stream, c.buffer, c.res,
        [this, &c](error_code ec, std::size_t) { answered(c, ec); });
    });
  }

  void answered(connection& c, error_code ec) {
    if (ec)
      return lost(c);
    last_answer_ = steady::now();
    r_.latency_ms.push_back(
      std::chrono::duration<double, std::milli>(last_answer_ - c.due).count());
    auto status = c.res.result_int();
    ++(status >= 200 && status < 300 ? r_.answered_2xx : r_.answered_other);
    if (!c.res.keep_alive())
      return lost(c); // the server closes it: take a fresh one
    --busy_;
    idle(c);
    check_done();
  }

  void drain() {
    // Whatever fell due before the end is sent, even if its tick is pending.
    if (spec_.rate > 0)
      schedule(end_time_);
    phase_ = phase::draining;
    cap_.expires_after(drain_cap);
    cap_.async_wait([this](error_code) {
      r_.transport_errors += busy_; // never answered
      ioc_.stop();
    });
    check_done();
  }

  void check_done() {
    if (phase_ == phase::draining && busy_ == 0 && queue_.empty())
      ioc_.stop();
  }

  void report_progress() {
    progress_.expires_after(std::chrono::seconds(1));
    progress_.async_wait([this](error_code) {
      spec_.progress(r_.answered_2xx + r_.answered_other);
      report_progress();
    });
  }

  steady::time_point due(long k) const { // of request k, open loop
    return start_ + std::chrono::duration_cast<steady::duration>(
                      std::chrono::duration<double>(k / spec_.rate));
  }

  net::io_context ioc_; // first member: outlives the sockets and timers
  const load_spec& spec_;
  std::string where_; // host:port, also the Host header
  tcp::resolver::results_type endpoints_;
  std::vector<std::unique_ptr<connection>> conns_;
  std::vector<connection*> idle_;        // connected, nothing in flight
  std::deque<steady::time_point> queue_; // open loop: due, no idle connection
  net::steady_timer tick_{ioc_}, end_{ioc_}, cap_{ioc_}, progress_{ioc_};
  enum class phase { starting, running, draining } phase_ = phase::starting;
  int pending_connects_ = 0; // connections yet to complete their first try
  bool any_up_ = false;
  std::string first_error_;
  long busy_ = 0, next_ = 0; // requests in flight; next one of the schedule
  steady::time_point start_, end_time_, last_answer_;
  load_result r_;
};

} // namespace

double load_result::per_second() const {
  return seconds > 0 ? answered_2xx / seconds : 0;
}

double nearest_rank(std::vector<double> xs, double p) {
  if (xs.empty())
    return 0;
  auto n = xs.size();
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<std::size_t>(std::ceil(p / 100 * n));
  rank = std::clamp<std::size_t>(rank, 1, n);
  std::nth_element(xs.begin(), xs.begin() + (rank - 1), xs.end());
  return xs[rank - 1];
}

double load_result::percentile_ms(double p) const {
  return nearest_rank(latency_ms, p);
}

load_result run_http_load(const load_spec& spec) {
  return generator(spec).run();
}

} // namespace ef::bench
