// The metric catalog: one row per metric EventForge exports, with its
// type, help text and buckets (docs/operations.md lists them).

#include "actors/metric_catalog.hpp"

namespace ef {

namespace {

// From 100 us (a handler's statement, a batch's ack on loopback) to a
// minute (a backlog, an outage): measured end-to-end latency is 6 ms p50 at
// 100 orders/s and tens of seconds while a backlog drains
// (docs/performance.md), so the lowest buckets must not lump them together.
const std::vector<double> latency_buckets{
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
  0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
const std::vector<double> size_buckets{1,   2,   5,   10,   25,  50,
                                       100, 250, 500, 1000, 5000};

} // namespace

const std::map<std::string, metric_family>& metric_catalog() {
  static const std::map<std::string, metric_family> all{
    {"api_orders_total", {metric_kind::counter, "Orders accepted by the API."}},
    {"api_commands_expired_total",
     {metric_kind::counter,
      "Order commands refused or rolled back because their "
      "deadline passed before they could be committed; "
      "nothing of them was written."}},
    {"http_requests_total",
     {metric_kind::counter, "HTTP requests by route and status class."}},
    {"http_open_connections",
     {metric_kind::gauge, "HTTP connections open now (at most "
                          "http.max-connections)."}},
    {"http_connections_rejected_total",
     {metric_kind::counter, "Connections answered 503 because all "
                            "http.max-connections were in use."}},
    {"http_accept_errors_total",
     {metric_kind::counter,
      "Failed accepts of the HTTP listener by error (EMFILE, "
      "ENFILE, ENOBUFS, ...); it accepts again after a short "
      "pause."}},
    {"http_blocking_refused_total",
     {metric_kind::counter,
      "Requests answered 503 at once because 16 requests "
      "already wait for the database or the broker (/readyz, "
      "/overview, traces, scenario runs)."}},
    {"http_request_duration_seconds",
     {metric_kind::histogram, "HTTP request latency by route.",
      &latency_buckets}},
    {"outbox_unsent_rows",
     {metric_kind::gauge, "Outbox rows not yet published."}},
    {"outbox_oldest_unsent_age_seconds",
     {metric_kind::gauge,
      "Age of the oldest unpublished outbox row (0 if none)."}},
    {"relay_published_total",
     {metric_kind::counter,
      "Outbox rows published and marked sent, per shard."}},
    {"relay_publish_errors_total",
     {metric_kind::counter,
      "Records the broker did not acknowledge, per shard."}},
    {"api_batch_size",
     {metric_kind::histogram, "Order commands committed per API transaction.",
      &size_buckets}},
    {"consumer_batch_size",
     {metric_kind::histogram,
      "Events applied per consumer transaction (batched "
      "path).",
      &size_buckets}},
    {"relay_batch_size",
     {metric_kind::histogram, "Rows per relay publish batch.", &size_buckets}},
    {"relay_publish_ack_seconds",
     {metric_kind::histogram,
      "Time from handing a batch to the producer until "
      "every delivery report arrived.",
      &latency_buckets}},
    {"outbox_publish_delay_seconds",
     {metric_kind::histogram,
      "Time from an outbox row's insert until the broker acknowledged its "
      "record (database and process clocks; one observation per "
      "acknowledged row).",
      &latency_buckets}},
    {"relay_claim_to_mark_seconds",
     {metric_kind::histogram,
      "Time from reading a batch of unsent rows until they were marked sent "
      "(publish, acks and the mark's transaction).",
      &latency_buckets}},
    {"consumer_deliveries_total",
     {metric_kind::counter,
      "Records handed to a partition actor (every delivery)."}},
    {"consumer_applied_total",
     {metric_kind::counter, "Events applied (first delivery per consumer)."}},
    {"consumer_duplicates_suppressed_total",
     {metric_kind::counter, "Idempotency conflicts: deliveries the guard "
                            "suppressed."}},
    {"consumer_retries_total",
     {metric_kind::counter, "Failed attempts that will be retried inline."}},
    {"consumer_rebalances_total",
     {metric_kind::counter, "Partition assignments received."}},
    {"consumer_lag",
     {metric_kind::gauge,
      "Log end offset minus committed offset, per consumer and "
      "partition."}},
    {"consumer_handler_seconds",
     {metric_kind::histogram, "Idempotent handler transaction latency.",
      &latency_buckets}},
    {"end_to_end_seconds",
     {metric_kind::histogram,
      "Outbox insert until the business effect committed.", &latency_buckets}},
    {"dlq_parked_total",
     {metric_kind::counter,
      "Deliveries parked in the DLQ, by consumer and class."}},
    {"dlq_entries", {metric_kind::gauge, "DLQ entries by status."}},
    {"dlq_oldest_parked_age_seconds",
     {metric_kind::gauge,
      "Age of the oldest unresolved DLQ entry (0 if none)."}},
    {"dlq_oldest_unacknowledged_replay_age_seconds",
     {metric_kind::gauge,
      "Age of the oldest replay no broker has acknowledged yet (0 if "
      "none): a replay stuck on a topic that is gone or refuses it."}},
    {"dlq_replays_given_up_total",
     {metric_kind::counter,
      "Replays parked again after dlq.replay-give-up-ms without an "
      "acknowledged publish, by consumer."}},
    {"consumer_offset_commit_failures_total",
     {metric_kind::counter,
      "Offset commits the group coordinator refused or did not answer, per "
      "consumer (not fatal: a later commit or a suppressed redelivery "
      "settles them)."}},
    {"consumer_paused",
     {metric_kind::gauge,
      "1 while an operator has paused the consumer (eventforge consumer "
      "pause; its members leave the group and apply nothing), else 0; set "
      "by each node's member at its heartbeat."}},
    {"consumer_lag_sample_age_seconds",
     {metric_kind::gauge,
      "Seconds since consumer_lag was last read from the broker, per "
      "consumer; while a read fails its consumer_lag series are absent."}},
    {"kafka_broker_up",
     {metric_kind::gauge,
      "1 if a client of this role is connected to the broker, 0 if its "
      "connection is down (reconnecting); absent for a broker it never "
      "needed. From librdkafka's statistics."}},
    {"kafka_brokers_down",
     {metric_kind::gauge,
      "Brokers that are down: refusing the connection this process tries "
      "each sample, or that clients try to reach while none is connected."}},
    {"kafka_broker_reachable",
     {metric_kind::gauge,
      "1 if the broker accepted a TCP connection this sample (every broker "
      "the cluster's metadata names is tried), else 0."}},
    {"kafka_broker_rtt_seconds",
     {metric_kind::gauge,
      "Average request round trip to the broker over the last statistics "
      "interval, per client role."}},
    {"kafka_broker_outstanding_requests",
     {metric_kind::gauge,
      "Requests waiting to be sent to the broker or for its answer, per "
      "client role."}},
    {"kafka_broker_request_errors_total",
     {metric_kind::counter,
      "Requests to the broker that failed or timed out, per client role "
      "(librdkafka retries many of them inside its delivery timeout)."}},
    {"kafka_broker_request_retries_total",
     {metric_kind::counter, "Requests to the broker sent again, per client "
                            "role."}},
    {"kafka_partition_leader_changes_total",
     {metric_kind::counter,
      "Partition leader changes this process's clients saw, per topic."}},
    {"kafka_producer_undelivered_records",
     {metric_kind::gauge,
      "Records a producer role holds without a delivery report yet (queued "
      "or in flight)."}},
    {"kafka_producer_queue_latency_seconds",
     {metric_kind::gauge,
      "p99 of the time a producer role's records waited in its queue."}},
    {"kafka_consumer_group_up",
     {metric_kind::gauge,
      "1 if every member of this role in this process is in its group "
      "(librdkafka's group state \"up\"), else 0."}},
    {"kafka_consumer_group_coordinator_up",
     {metric_kind::gauge,
      "1 if every member of this role is connected to its group "
      "coordinator, else 0."}},
    {"kafka_consumer_group_assigned_partitions",
     {metric_kind::gauge, "Partitions assigned to this role's members in "
                          "this process."}},
    {"kafka_consumer_group_rebalances_total",
     {metric_kind::counter, "Rebalances this role's members took part in."}},
    {"kafka_client_errors_total",
     {metric_kind::counter,
      "Errors a Kafka client reported (all brokers down, a failed TLS "
      "handshake or SASL authentication, ...), per role and error name."}},
    {"relay_last_delivery_report_timestamp_seconds",
     {metric_kind::gauge,
      "Unix time of the last delivery report a relay got (acknowledged or "
      "failed): publishing has stalled when it stops while rows wait."}},
    {"actor_restarts_total",
     {metric_kind::counter, "Actor restarts by kind and reason class."}},
    {"actors_down",
     {metric_kind::gauge,
      "Supervised actors currently waiting to be restarted."}},
    {"retention_deleted_total",
     {metric_kind::counter,
      "Rows deleted by the retention janitor, by table."}},
    {"recovery_journal_dropped_total",
     {metric_kind::counter,
      "Recovery journal lines dropped: its bounded queue was "
      "full while the database was unreachable, or the "
      "database refused them."}},
    {"chaos_crashes_total",
     {metric_kind::counter, "Crashes injected at each crash point."}},
    {"consumer_positions_lost_total",
     {metric_kind::counter, "Positions a consumer found gone from the broker "
                            "(trimmed log, new broker), per consumer."}},
    {"consumer_fetch_stalls_total",
     {metric_kind::counter,
      "Owned partitions with records to read that were fed "
      "nothing for 10 s and had their fetch restarted."}},
    {"consumer_deferred_total",
     {metric_kind::counter,
      "Events held back because an earlier event of their "
      "order was missing; queued again behind it."}},
    {"repair_republished_total",
     {metric_kind::counter, "Events queued for republishing because a consumer "
                            "could no longer read them, by reason."}},
    {"broker_epochs_total",
     {metric_kind::counter,
      "Broker epochs this process began: the broker had lost "
      "records the outbox published."}},
    {"broker_epoch", {metric_kind::gauge, "Current broker epoch."}},
    {"gauges_sampled_timestamp_seconds",
     {metric_kind::gauge,
      "When the outbox and DLQ gauges (source database) and "
      "consumer_lag (source broker) were last read; it stops "
      "moving while the source is down."}},
    {"relay_waiting_for_consumers",
     {metric_kind::gauge, "1 while a relay shard waits: a partition holds "
                          "relay.max-lead-bytes beyond the slowest consumer."}},
    {"consumer_partitions_parked",
     {metric_kind::gauge,
      "Owned partitions read to the end that stopped fetching "
      "until a relay announces a record (kafka.park-idle-ms)."}},
  };
  return all;
}

} // namespace ef
