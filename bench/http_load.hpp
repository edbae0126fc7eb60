#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace ef::bench {

/// What `eventforge bench` sends: POST requests with JSON bodies over a fixed
/// set of keep-alive connections, either as fast as the server answers
/// (closed loop) or on a fixed schedule (open loop).
struct load_spec {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string target = "/orders"; ///< POST target
  int connections = 16;           ///< keep-alive connections
  /// 0: closed loop, each connection sends its next request when the previous
  /// answer arrived. >0: open loop, requests per second in total, request k
  /// due at start + k/rate whether or not the server keeps up.
  double rate = 0;
  std::chrono::milliseconds duration{20000};
  /// JSON body of request i (i = 0, 1, 2, ...); called on the generator's
  /// thread, never concurrently.
  std::function<std::string(long)> body;
  /// Optional; called about once per second, on the generator's thread, with
  /// the number of requests answered so far.
  std::function<void(long)> progress;
};

struct load_result {
  long sent = 0;
  long answered_2xx = 0;
  long answered_other = 0;
  /// Connections lost or not established: failed connects (each attempt),
  /// resets, timeouts (10 s per request), the server closing the connection
  /// (also after an answer with `Connection: close`), and requests still
  /// unanswered when the 10 s drain after `duration` ran out. The request in
  /// flight on a lost connection is not retried.
  long transport_errors = 0;
  /// Open loop: requests that found no idle connection at their scheduled
  /// time and were sent later.
  long late = 0;
  double seconds = 0; ///< from the first send to the end of the last answer
  /// Per answered request (any status). Open loop: measured from the
  /// request's scheduled time, so a server that falls behind shows it in the
  /// latencies instead of hiding it (no coordinated omission).
  std::vector<double> latency_ms;
  /// The generator's own thread: CPU (user + system) and context switches,
  /// so a bench in the same process as the server can take them out.
  double generator_cpu_s = 0;
  long generator_switches = 0;

  double per_second() const; ///< answered_2xx / seconds
  /// p in [0,100], nearest-rank on latency_ms; 0 when empty.
  double percentile_ms(double p) const;
};

/// The nearest-rank percentile `p` (0-100) of `xs`; 0 when empty.
double nearest_rank(std::vector<double> xs, double p);

/// Runs the load on one Boost.Asio io_context driven by one thread of its own
/// while the calling thread waits. Throws std::runtime_error only if the host
/// cannot be resolved or not one connection can be established at the start;
/// an exception thrown by `body` or `progress` ends the run and is rethrown.
load_result run_http_load(const load_spec& spec);

} // namespace ef::bench
