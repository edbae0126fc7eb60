// What every phase of `eventforge bench` measures with: the load on the
// HTTP front, the orders' bodies, the waits for the pipeline, and the JSON
// of a latency summary and of a load's result.

#include "app/tools/bench_phases.hpp"
#include "persistence/invariant_queries.hpp"
#include <eventforge/actors/applied.hpp>
#include <eventforge/config/logging.hpp>

#include <thread>

namespace ef::app::bench_run {

double since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

std::string order_body(const std::string& who, long i) {
  return R"({"customer_id":"bench-)" + who + "-" + std::to_string(i % 97) +
         R"(","items":[{"sku":"sku-)" + std::to_string(i % 13) + R"(","qty":)" +
         std::to_string(1 + i % 4) + R"(,"price_cents":)" +
         std::to_string(100 + i % 1000) + "}]}";
}

json to_json(const bench::latency_summary& s) {
  return {{"samples", s.samples},
          {"p50_ms", s.p50_ms},
          {"p90_ms", s.p90_ms},
          {"p99_ms", s.p99_ms},
          {"max_ms", s.max_ms}};
}

json to_json(const bench::load_result& r) {
  return {{"orders_per_s", r.per_second()},
          {"answered_2xx", r.answered_2xx},
          {"answered_other", r.answered_other},
          {"transport_errors", r.transport_errors},
          {"late", r.late},
          {"seconds", r.seconds},
          {"p50_ms", r.percentile_ms(50)},
          {"p99_ms", r.percentile_ms(99)},
          {"max_ms", r.percentile_ms(100)}};
}

bool wait_drained(const config::settings& cfg, const endpoints& ep,
                  int timeout_s, const char* phase) {
  auto started = clock::now();
  auto next_note = started + std::chrono::seconds(10);
  while (!applied_gap(cfg, ep).empty()) {
    if (since(started) > timeout_s) {
      ef::log::error("bench: {}: the pipeline did not drain within {} s", phase,
                     timeout_s);
      return false;
    }
    if (clock::now() > next_note) {
      next_note = clock::now() + std::chrono::seconds(10);
      auto c = persistence::read_counts(ep.database_dsn);
      ef::log::warn("bench: {}: draining: {} unsent, {} of {} marks", phase,
                    c.unsent, c.marks,
                    c.events * static_cast<long>(cfg.consumer.enabled.size()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

bench::load_spec load_at(const std::string& url) {
  bench::load_spec spec;
  auto hostport = url.substr(url.find("://") + 3);
  spec.host = hostport.substr(0, hostport.rfind(':'));
  spec.port = std::stoi(hostport.substr(hostport.rfind(':') + 1));
  return spec;
}

bench::load_result http_phase(const std::string& url, int clients, double rate,
                              int seconds, const std::string& who) {
  auto spec = load_at(url);
  spec.connections = clients;
  spec.rate = rate;
  spec.duration = std::chrono::seconds(seconds);
  spec.body = [who](long i) { return order_body(who, i); };
  auto started = clock::now();
  spec.progress = [&](long answered) {
    if (static_cast<long>(since(started)) % 5 == 0)
      ef::log::warn("bench: HTTP {}: {} orders answered", who, answered);
  };
  return bench::run_http_load(spec);
}

bool await_applied(const telemetry& metrics, std::uint64_t applied0,
                   long orders, std::size_t consumers, int timeout_s) {
  auto want = applied0 + static_cast<std::uint64_t>(orders) * consumers;
  auto started = clock::now();
  while (metrics.sum("consumer_applied_total") < want) {
    if (since(started) > timeout_s)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

} // namespace ef::app::bench_run
