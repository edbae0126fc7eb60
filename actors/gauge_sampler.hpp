#pragma once

#include "actors/context.hpp"
#include "actors/gauges.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ef {

/// What the gauge sampler is built from. Production: a reader over one
/// database connection it keeps (production_gauge_sampler_deps);
/// deterministic actor tests give a fake.
struct gauge_sampler_deps {
  std::function<std::unique_ptr<persistence::ops_source>()> db;
};

gauge_sampler_deps production_gauge_sampler_deps(const context_ptr& ctx);

/// Samples the gauges that come from the database (outbox size and age,
/// DLQ entries and age) every metrics.sample-interval-ms, over one
/// connection it keeps, and sets them on the tree's telemetry. A scrape
/// renders the last sample and never queries the database or the broker
/// itself, so scrapes cannot load them. A value is at most one interval plus
/// one read old; gauges_sampled_timestamp_seconds{source="database"} says
/// when it was last read successfully (it stops moving while the database
/// is down). The broker's gauges are the lag sampler's: a broker client that
/// hangs (librdkafka 2.0.2 can, past its timeout, once its broker went away)
/// never freezes the outbox age, which matters most while the broker is
/// down. A drain does not stop it (on_drain::keep_rounds): it only reads.
/// Blocking, so detached; supervised under "maintenance".
struct gauge_sampler_state {
  context_ptr ctx;
  std::unique_ptr<persistence::ops_source> db;
  /// One sample; returns the delay until the next.
  std::chrono::milliseconds round();
  static inline const char* name = "gauge-sampler";
};

caf::behavior gauge_sampler(caf::stateful_actor<gauge_sampler_state>* self,
                            context_ptr ctx);

/// The same actor, built from `deps`.
caf::behavior gauge_sampler_with(caf::stateful_actor<gauge_sampler_state>* self,
                                 context_ptr ctx, gauge_sampler_deps deps);

/// What the lag sampler is built from. Production: broker clients made for
/// each sample (production_lag_sampler_deps); deterministic actor tests give
/// a fake. `read` throws if the broker does not answer.
struct lag_sampler_deps {
  std::function<lag_by_consumer()> read;
};

lag_sampler_deps production_lag_sampler_deps(const context_ptr& ctx);

/// Samples consumer_lag from the broker every metrics.sample-interval-ms
/// (at least 5 s), with broker clients made for each sample (one kept
/// across samples hangs once its broker went away);
/// gauges_sampled_timestamp_seconds{source="broker"} says when, and
/// consumer_lag_sample_age_seconds how old each consumer's lag is. A read
/// that fails (a broker or coordinator the sampler cannot reach) removes
/// the consumer_lag series: absent, never a stale value. Its own actor, so its
/// hangs are its own (gauge_sampler). Blocking, so detached; supervised under
/// "maintenance".
struct lag_sampler_state {
  context_ptr ctx;
  lag_sampler_deps deps;
  /// The consumer_lag series the last read set (labels), and when a read
  /// last succeeded (or the sampler started): a failed read removes them.
  std::set<telemetry::labels> lag_shown;
  std::optional<caf::actor_clock::time_point> last_read, started;
  /// The actor's clock (the test coordinator's in deterministic tests).
  caf::actor_clock* clock = nullptr;
  std::chrono::milliseconds round();
  static inline const char* name = "lag-sampler";
};

caf::behavior lag_sampler(caf::stateful_actor<lag_sampler_state>* self,
                          context_ptr ctx);

/// The same actor, built from `deps`.
caf::behavior lag_sampler_with(caf::stateful_actor<lag_sampler_state>* self,
                               context_ptr ctx, lag_sampler_deps deps);

} // namespace ef
