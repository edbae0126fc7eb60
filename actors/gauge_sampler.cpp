#include "actors/gauge_sampler.hpp"

#include "actors/crash_log.hpp"
#include "actors/round_loop.hpp"
#include "actors/thread_name.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/dlq_messages.hpp>

#include <algorithm>

namespace ef {

namespace {

/// The least time between two lag samples (each makes a Kafka client).
constexpr std::chrono::milliseconds min_lag_interval{5000};

double unix_now() {
  return std::chrono::duration<double>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace

std::vector<partition_lag> lag_of(const std::vector<std::int64_t>& log_end,
                                  const std::vector<std::int64_t>& committed) {
  std::vector<partition_lag> out;
  for (size_t p = 0; p < log_end.size(); ++p) {
    auto c = p < committed.size() ? committed[p] : -1;
    auto done = c < 0 ? 0 : c;
    out.push_back({static_cast<int>(p), log_end[p], c,
                   std::max<long long>(0, log_end[p] - done)});
  }
  return out;
}

lag_by_consumer read_lag(const config::settings& cfg,
                         kafka::offset_reader& broker, int timeout_ms) {
  lag_by_consumer out;
  auto ends =
    broker.log_ends(cfg.kafka.topic, cfg.kafka.partitions, timeout_ms);
  for (auto& c : cfg.consumer.enabled)
    out[c] = lag_of(ends, broker.committed("eventforge." + c, cfg.kafka.topic,
                                           cfg.kafka.partitions, timeout_ms));
  return out;
}

void export_row_gauges(const persistence::ops_rows& rows, telemetry& m) {
  m.set("outbox_unsent_rows", {}, static_cast<double>(rows.outbox_unsent));
  m.set("outbox_oldest_unsent_age_seconds", {},
        rows.outbox_oldest_unsent_age_s);
  for (auto status : dlq_status::all) {
    auto i = rows.dlq_by_status.find(status);
    m.set("dlq_entries", {{"status", status}},
          i == rows.dlq_by_status.end() ? 0.0 : static_cast<double>(i->second));
  }
  m.set("dlq_oldest_parked_age_seconds", {}, rows.dlq_oldest_parked_age_s);
  m.set("dlq_oldest_unacknowledged_replay_age_seconds", {},
        rows.dlq_oldest_unacknowledged_replay_age_s);
}

void export_lag(const lag_by_consumer& lag, telemetry& m) {
  for (auto& [consumer, parts] : lag)
    for (auto& p : parts)
      m.set(
        "consumer_lag",
        {{"consumer", consumer}, {"partition", std::to_string(p.partition)}},
        static_cast<double>(p.lag));
}

std::chrono::milliseconds gauge_sampler_state::round() {
  auto& m = *ctx->metrics;
  try {
    export_row_gauges(db->read(), m);
    m.set("gauges_sampled_timestamp_seconds", {{"source", "database"}},
          unix_now());
  } catch (const std::exception& e) {
    ef::log::debug("gauge sampler: cannot read the database: {}", e.what());
  }
  return std::chrono::milliseconds(ctx->cfg.metrics.sample_interval_ms);
}

gauge_sampler_deps production_gauge_sampler_deps(const context_ptr& ctx) {
  gauge_sampler_deps deps;
  deps.db = [ctx] {
    return std::make_unique<persistence::ops_reader>(ctx->dsn);
  };
  return deps;
}

caf::behavior gauge_sampler(caf::stateful_actor<gauge_sampler_state>* self,
                            context_ptr ctx) {
  auto deps = production_gauge_sampler_deps(ctx);
  return gauge_sampler_with(self, std::move(ctx), std::move(deps));
}

caf::behavior gauge_sampler_with(caf::stateful_actor<gauge_sampler_state>* self,
                                 context_ptr ctx, gauge_sampler_deps deps) {
  log_crashes(self, "gauge sampler");
  name_blocking_thread(self, "gauges");
  auto& st = self->state;
  st.db = deps.db();
  st.ctx = std::move(ctx);
  // A drained tree that keeps running (a host may drain and go on serving
  // /metrics) still shows the outbox filling and the lag it leaves.
  return round_loop(self, on_drain::keep_rounds);
}

std::chrono::milliseconds lag_sampler_state::round() {
  auto& m = *ctx->metrics;
  auto now = clock->now();
  if (!started)
    started = now;
  std::set<telemetry::labels> set_now;
  try {
    auto lag = deps.read();
    for (auto& [consumer, parts] : lag)
      for (auto& p : parts)
        set_now.insert(
          {{"consumer", consumer}, {"partition", std::to_string(p.partition)}});
    export_lag(lag, m);
    last_read = now;
    m.set("gauges_sampled_timestamp_seconds", {{"source", "broker"}},
          unix_now());
  } catch (const std::exception& e) {
    ef::log::debug("lag sampler: cannot read the broker: {}", e.what());
  }
  // A lag the broker did not confirm now is absent, never frozen at the
  // last value (which read 0 through a coordinator loss): only what this
  // read set stays, and its age says how old it is.
  for (auto& l : lag_shown)
    if (set_now.count(l) == 0)
      m.unset("consumer_lag", l);
  lag_shown = std::move(set_now);
  auto age =
    std::chrono::duration<double>(now - (last_read ? *last_read : *started));
  for (auto& consumer : ctx->cfg.consumer.enabled)
    m.set("consumer_lag_sample_age_seconds", {{"consumer", consumer}},
          age.count());
  // A client made and torn down per sample was half of an idle process's
  // CPU at one sample a second: the lag is read at most every 5 s.
  return std::max(
    std::chrono::milliseconds(ctx->cfg.metrics.sample_interval_ms),
    min_lag_interval);
}

lag_sampler_deps production_lag_sampler_deps(const context_ptr& ctx) {
  lag_sampler_deps deps;
  deps.read = [ctx] {
    // Clients for this sample only: one kept across samples hangs in
    // query_watermark_offsets, past its timeout, once the broker it was
    // connected to goes away (librdkafka 2.0.2). A fresh one usually fails
    // at once ("all broker connections are down"); if it hangs, only this
    // actor waits. Either way a scrape never opens one.
    kafka::offset_reader broker(ctx->cluster);
    return read_lag(ctx->cfg, broker, 2000);
  };
  return deps;
}

caf::behavior lag_sampler(caf::stateful_actor<lag_sampler_state>* self,
                          context_ptr ctx) {
  auto deps = production_lag_sampler_deps(ctx);
  return lag_sampler_with(self, std::move(ctx), std::move(deps));
}

caf::behavior lag_sampler_with(caf::stateful_actor<lag_sampler_state>* self,
                               context_ptr ctx, lag_sampler_deps deps) {
  log_crashes(self, "lag sampler");
  name_blocking_thread(self, "lag");
  self->state.ctx = std::move(ctx);
  self->state.deps = std::move(deps);
  self->state.clock = &self->clock();
  return round_loop(self, on_drain::keep_rounds);
}

} // namespace ef
