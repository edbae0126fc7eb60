#include "actors/declared_series.hpp"

#include <string>

namespace ef {

void declare_series(telemetry& m, const config::settings& cfg) {
  for (auto& c : cfg.consumer.enabled)
    for (auto name :
         {"consumer_deliveries_total", "consumer_applied_total",
          "consumer_duplicates_suppressed_total", "consumer_retries_total",
          "consumer_rebalances_total", "consumer_positions_lost_total",
          "consumer_fetch_stalls_total", "consumer_deferred_total"})
      m.declare(name, {{"consumer", c}});
  for (auto& c : cfg.consumer.enabled)
    for (auto name : {"consumer_batch_size", "consumer_handler_seconds",
                      "end_to_end_seconds"})
      m.declare(name, {{"consumer", c}});
  for (auto name :
       {"api_batch_size", "relay_batch_size", "relay_publish_ack_seconds",
        "relay_claim_to_mark_seconds", "outbox_publish_delay_seconds"})
    m.declare(name);
  // Every kind of supervised actor, by the reason classes a restart has.
  for (auto kind :
       {"supervisor", "api", "relay", "group-member", "partition",
        "dlq-handler", "gauge-sampler", "lag-sampler", "janitor", "repairer"})
    for (auto reason : {"injected", "db_unavailable", "exception"})
      m.declare("actor_restarts_total", {{"kind", kind}, {"reason", reason}});
  for (int s = 0; s < cfg.relay.shards; ++s) {
    auto shard = std::to_string(s);
    m.declare("relay_published_total", {{"shard", shard}});
    m.declare("relay_publish_errors_total", {{"shard", shard}});
    m.set("relay_waiting_for_consumers", {{"shard", shard}}, 0);
  }
  for (auto outcome : {"created", "replayed"})
    m.declare("api_orders_total", {{"outcome", outcome}});
  m.declare("api_commands_expired_total");
  m.declare("recovery_journal_dropped_total");
  for (auto table : {"outbox", "processed_events", "recovery_journal",
                     "idempotency_keys", "dlq_events"})
    m.declare("retention_deleted_total", {{"table", table}});
  for (auto reason : {"consumer_gap", "broker_epoch"})
    m.declare("repair_republished_total", {{"reason", reason}});
  m.declare("broker_epochs_total");
}

} // namespace ef
