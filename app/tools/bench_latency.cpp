// (g), (b) and (c) of `eventforge bench`: lone orders right after start,
// closed-loop throughput per number of keep-alive clients, and latencies
// at a fixed rate from the database's clocks.

#include "app/tools/bench_phases.hpp"
#include <eventforge/config/logging.hpp>

#include <random>
#include <thread>

namespace ef::app::bench_run {

/// (g) "lone": orders one at a time, each on a connection of its own, at
/// random gaps of 0.2-5 s (a fixed seed, so runs compare), the first right
/// after the pipeline is ready: what a user of a mostly idle system sees.
/// Spans from the database's clocks, order commit to last effect.
json lone_phase(const config::settings& cfg, const bench_plan& plan,
                const std::string& url, const std::string& dsn,
                const telemetry& metrics) {
  auto applied0 = metrics.sum("consumer_applied_total");
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> gap_s(0.2, 5.0);
  long answered = 0;
  for (int i = 0; i < plan.lone_orders; ++i) {
    if (i > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(gap_s(rng)));
    auto spec = load_at(url);
    spec.connections = 1;
    spec.rate = 1; // one request: the next would be due after the duration
    spec.duration = std::chrono::milliseconds(500);
    spec.body = [i](long) { return order_body("lone", i); };
    answered += bench::run_http_load(spec).answered_2xx;
  }
  auto consumers = cfg.consumer.enabled.size();
  if (!await_applied(metrics, applied0, answered, consumers, plan.timeout_s))
    ef::log::error("bench: lone: not every order was applied");
  auto spans =
    bench::spans_per_order(dsn, "bench-lone-%", cfg.consumer.enabled);
  std::vector<double> effect, published;
  for (auto& x : spans) {
    effect.push_back(x.last_effect_ms);
    published.push_back(x.published_ms);
  }
  json out = {{"orders", answered},
              {"measured", spans.size()},
              {"e2e_ms", effect},
              {"published_ms", published}};
  if (spans.empty())
    return out;
  out["first_ms"] = effect.front();
  out["first_published_ms"] = published.front();
  out["p50_ms"] = bench::nearest_rank(effect, 50);
  out["max_ms"] = bench::nearest_rank(effect, 100);
  out["published_p50_ms"] = bench::nearest_rank(published, 50);
  out["published_max_ms"] = bench::nearest_rank(published, 100);
  return out;
}

json throughput_phases(const config::settings& cfg, const bench_plan& plan,
                       const endpoints& ep, const std::string& url) {
  json http = json::array();
  for (auto c : plan.clients) {
    ef::log::warn("bench: HTTP: {} keep-alive clients for {} s", c,
                  plan.seconds);
    auto r = http_phase(url, c, 0, plan.seconds, "c" + std::to_string(c));
    auto j = to_json(r);
    j["clients"] = c;
    http.push_back(j);
    ef::log::warn("bench: HTTP {} clients: {:.0f} orders/s, p99 {:.1f} ms", c,
                  r.per_second(), r.percentile_ms(99));
    wait_drained(cfg, ep, plan.timeout_s, "after HTTP");
  }
  return http;
}

latency_figures latency_phase(const config::settings& cfg,
                              const bench_plan& plan, const endpoints& ep,
                              const std::string& url, double rate,
                              json& report) {
  ef::log::warn("bench: latency: {:.0f} orders/s for {} s", rate, plan.seconds);
  auto lat_load = http_phase(url, 16, rate, plan.seconds, "lat");
  wait_drained(cfg, ep, plan.timeout_s, "latency");
  auto e2e =
    bench::measure_e2e(ep.database_dsn, "bench-lat-%", cfg.consumer.enabled);
  json per_consumer;
  for (auto& [name, s] : e2e.consumers)
    per_consumer[name] = to_json(s);
  report["latency"] = {{"rate", rate},
                       {"clock", e2e.clock},
                       {"http", to_json(lat_load)},
                       {"published", to_json(e2e.published)},
                       {"consumers", per_consumer}};
  return {rate, e2e};
}

} // namespace ef::app::bench_run
