#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ef::config {

/// Typed, validated configuration of one EventForge process. Every field is
/// declared once, with its key, default and description, in options.cpp.
struct settings {
  struct http_section {
    std::string host = "127.0.0.1";
    int port = 8080;
    std::int64_t max_body_bytes = 64 * 1024;
    int max_header_bytes = 16 * 1024;
    int threads = 2;
    int request_timeout_ms = 5000;
    int header_timeout_ms = 10000;
    int idle_timeout_ms = 5000;
    int max_connections = 1024;
    std::string admin_token; ///< "[NAME:]SECRET"; empty: admin endpoints off
    /// A file holding admin_token (read at start); "": none.
    std::string admin_token_file;
  } http;

  struct node_section {
    /// This process's name among the nodes sharing one database and
    /// cluster: its database sessions carry it (application_name), so
    /// `status` names relay owners by node. "": host name and http.port.
    std::string name;
  } node;

  struct database_section {
    std::string url;
    std::string data_dir = "var/pg";
    std::string pg_bin_dir = "/usr/lib/postgresql/15/bin";
    int port = 0;
    bool durable = true;
    int connect_timeout_s = 2;
  } database;

  struct kafka_section {
    std::string brokers;
    /// librdkafka properties every Kafka client gets (TLS, SASL, ...): read
    /// from kafka.properties-file and EVENTFORGE_KAFKA_PROPERTY_* at start,
    /// or set here by a host. Values are never logged.
    std::map<std::string, std::string> properties;
    /// A file of librdkafka properties, one `key=value` per line; "": none.
    std::string properties_file;
    std::string topic = "orders";
    int partitions = 6;
    /// One: each Kafka client then runs one broker thread and one fetch
    /// loop instead of three (idle serve 12 % -> 7 % of a core, 157 -> 69
    /// threads; docs/performance.md). Partitions, groups and the protocol
    /// are the same with any count.
    int embedded_brokers = 1;
    int session_timeout_ms = 10000;
    int delivery_timeout_ms = 30000;
    std::string dlq_topic; ///< empty: "<topic>.dlq"
    int fetch_wait_max_ms = 5;
    /// The same for the DLQ handler's consumer: a parked event waits for an
    /// operator, not for milliseconds.
    int dlq_fetch_wait_ms = 500;
    /// How often every Kafka client reports its statistics (broker
    /// connections, queues, its group): the Kafka health series, /readyz
    /// and `status`. 0: never.
    int statistics_interval_ms = 5000;
    /// A partition read to its end and fed nothing for this long stops
    /// fetching until a relay says it published there (0: never).
    int park_idle_ms = 1000;
    /// Parked partitions fetch once this often all the same, for records
    /// no relay announced (DLQ replays, other producers, a lost signal).
    int park_recheck_ms = 2000;
    /// librdkafka debug contexts kept in memory by consumer group members
    /// and shown when a fetch stalls; empty: off.
    std::vector<std::string> debug_contexts;
    /// Which consumers' members keep them (empty: all).
    std::vector<std::string> debug_consumers;
    /// Replicas of every partition of the order and DLQ topics, as
    /// `eventforge topics create` creates and checks them. Three: a broker
    /// may fail while another is down for maintenance.
    int replication_factor = 3;
    /// The topics' min.insync.replicas: how many replicas an acks=all
    /// write waits for. 0: replication_factor - 1, at least 1.
    int min_insync_replicas = 0;
    /// The topics' retention.bytes per partition (-1: no limit) and
    /// retention.ms (-1: forever), Kafka's own defaults. What a partition
    /// keeps bounds how long a consumer may be behind (relay.max-lead-bytes
    /// derives from retention.bytes).
    std::int64_t retention_bytes = -1;
    std::int64_t retention_ms = 7LL * 24 * 3600 * 1000;
  } kafka;

  struct api_section {
    // Two: one commits while the other gathers. More workers mean more
    // round-robin queues of unequal speed, and the slowest sets the tail
    // latency (docs/notes/2026-12-03-batching.md).
    int workers = 2;
    int batch_max = 64;
    int batch_wait_us = 0;
    /// Seconds an idempotency key is kept; an older key is a new request.
    int idempotency_retention_s = 7 * 24 * 3600;
  } api;

  struct relay_section {
    int shards = 4;
    int batch_size = 500;
    /// The safety net only: every insert and requeue NOTIFYs the relay of
    /// its shard, on the one LISTEN session of the process.
    int poll_interval_ms = 30000;
    /// Backoff after a batch some of whose rows the broker refused.
    int publish_backoff_ms = 100;
    int publish_backoff_max_ms = 5000;
    /// Bytes a partition may hold beyond the slowest consumer; 0: no limit;
    /// -1: derived from the topic's retention (kafka/lead_limit.hpp).
    std::int64_t max_lead_bytes = -1;
    /// Rows a relay has sent and not seen reported; a partition that does
    /// not answer holds at most these, the others publish meanwhile.
    int max_in_flight = 2000;
  } relay;

  struct repair_section {
    int interval_ms = 1000;
  } repair;

  struct shutdown_section {
    int drain_timeout_ms = 5000;
  } shutdown;

  struct consumer_section {
    std::vector<std::string> enabled = {"fulfillment", "billing"};
    int max_in_flight = 2048;
    int batch_max = 100;
    int max_attempts = 5;
    int backoff_initial_ms = 100;
    int backoff_max_ms = 5000;
    double backoff_jitter = 0.5;
  } consumer;

  struct retention_section {
    int outbox_s = 7 * 24 * 3600; ///< sent rows older than this go; 0: keep
    int processed_events_s = 0;   ///< 0: keep forever (see docs)
    /// Replayed and discarded DLQ entries older than this go; 0: keep.
    int dlq_resolved_s = 30 * 24 * 3600;
    int batch_size = 1000;
    int interval_ms = 60000;
  } retention;

  struct dlq_section {
    /// A replay no broker acknowledged for this long is parked again, with
    /// its last error (a topic gone, an ACL that refuses).
    int replay_give_up_ms = 10 * 60 * 1000;
  } dlq;

  struct supervisor_section {
    int max_restarts = 100;
    int restart_window_s = 10;
    int restart_backoff_ms = 50;
    int restart_backoff_max_ms = 5000;
    double restart_backoff_jitter = 0;
    /// A child up this long was healthy: its next crash backs off afresh.
    int restart_healthy_after_ms = 1000;
  } supervisor;

  struct chaos_section {
    std::vector<std::string> points; ///< enabled crash points
    double rate = 0.0;               ///< crash probability per evaluation
    std::uint64_t seed = 1;          ///< decides which evaluations crash
    int max_crashes_per_event = 2;   ///< per point; guarantees progress
  } chaos;

  struct demo_section {
    /// Scenario runs of the recovery page without the admin token.
    bool enabled = false;
  } demo;

  struct metrics_section {
    /// How often the gauges read from durable state (outbox, DLQ, consumer
    /// lag) are sampled; a scrape serves the last sample.
    int sample_interval_ms = 1000;
  } metrics;

  struct log_section {
    std::string level = "info";
    std::string format = "text"; ///< text or json
  } log;
};

} // namespace ef::config
