// (d) of `eventforge bench`: a backlog written while the pipeline is
// stopped, the relays alone over its first rows, then the whole pipeline
// draining it, with the process's memory every second.

#include "app/tools/bench_phases.hpp"
#include "kafka/lead_limit.hpp"
#include "persistence/backlog_writer.hpp"
#include <eventforge/config/logging.hpp>

#include <algorithm>
#include <thread>

namespace ef::app::bench_run {

namespace {

/// Runs the relays without consumers until they published `rows` rows;
/// returns the rows they published and the seconds since the first one.
std::pair<double, double>
relays_alone(caf::actor_system& sys, const config::settings& cfg,
             const endpoints& ep, std::shared_ptr<telemetry> metrics,
             std::shared_ptr<chaos> faults, long rows, int timeout_s) {
  auto alone = cfg;
  alone.consumer.enabled.clear(); // and so no pacing either
  pipeline relays(sys, alone, metrics, std::move(faults));
  auto published0 = metrics->sum("relay_published_total");
  auto t0 = clock::now();
  relays.start(ep);
  double first = -1;
  std::uint64_t published = 0;
  while (since(t0) < timeout_s &&
         published < static_cast<std::uint64_t>(rows)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    published = metrics->sum("relay_published_total") - published0;
    if (first < 0 && published > 0)
      first = since(t0);
  }
  auto took = first < 0 ? 0 : since(t0) - first;
  relays.stop();
  return {static_cast<double>(published), took};
}

} // namespace

backlog_figures drain_backlog(caf::actor_system& sys,
                              const config::settings& cfg,
                              const bench_plan& plan, const endpoints& ep,
                              pipeline& pipe,
                              std::shared_ptr<telemetry> registry,
                              std::shared_ptr<chaos> faults) {
  auto& metrics = *registry;
  backlog_figures f;
  auto n = plan.backlog;
  auto write_started = clock::now();
  persistence::backlog_spec spec;
  spec.orders = n;
  spec.shards = cfg.relay.shards;
  spec.progress = [&](long written) {
    if (written % 100000 == 0 || written == n)
      ef::log::warn("bench: backlog: {} of {} orders written", written, n);
  };
  persistence::write_backlog(ep.database_dsn, spec);
  f.write_s = since(write_started);
  // The relays alone may publish as far ahead of the consumers as pacing
  // would let them (relay.max-lead-bytes per partition, at ~512 bytes a
  // record): the in-process broker keeps all of it for the consumers.
  auto lead = cfg.relay.max_lead_bytes > 0 ? cfg.relay.max_lead_bytes
              : cfg.relay.max_lead_bytes < 0
                ? kafka::lead_limit::from_retention(ep.kafka_log_bytes >= 0
                                                      ? ep.kafka_log_bytes
                                                      : std::int64_t{5} << 20)
                : std::int64_t{64} << 20;
  auto alone_rows =
    std::min<long>(n, static_cast<long>(lead * cfg.kafka.partitions / 512));
  ef::log::warn("bench: backlog: the relays alone publish {} rows", alone_rows);
  reset_peak_rss();
  auto published0 = metrics.sum("relay_published_total");
  std::tie(f.alone_rows, f.alone_s) = relays_alone(
    sys, cfg, ep, registry, std::move(faults), alone_rows, plan.timeout_s);
  auto applied0 = metrics.sum("consumer_applied_total");
  auto want = static_cast<std::uint64_t>(n) * cfg.consumer.enabled.size();
  auto t0 = clock::now();
  pipe.start(ep);
  auto next_sample = t0;
  auto next_note = t0 + std::chrono::seconds(10);
  while (since(t0) < plan.timeout_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto published = metrics.sum("relay_published_total") - published0;
    auto applied = metrics.sum("consumer_applied_total") - applied0;
    bool done = published >= static_cast<std::uint64_t>(n);
    if (f.relay_s == 0 && done)
      f.relay_s = since(t0);
    if (clock::now() >= next_sample) {
      next_sample += std::chrono::seconds(1);
      f.rss_mib.push_back(rss_mib());
    }
    if (clock::now() >= next_note) {
      next_note += std::chrono::seconds(10);
      ef::log::warn("bench: backlog: {:.0f} s: {} published, {} of {} "
                    "effects, RSS {:.0f} MiB",
                    since(t0), published, applied, want, rss_mib());
    }
    if (applied >= want) {
      f.consumers_s = since(t0);
      break;
    }
  }
  f.drained = f.consumers_s > 0 &&
              wait_drained(cfg, ep, plan.timeout_s, "backlog settle");
  f.settle_s = since(t0);
  f.peak_rss_mib = peak_rss_mib();
  return f;
}

} // namespace ef::app::bench_run
