#include "config/crash_points.hpp"
#include "config/nearest.hpp"
#include <eventforge/config/options.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace ef::config {

namespace {

template <class T>
using field_ref = T& (*)(settings&);

/// Parses a whole string as a base-10 integer within [lo, hi].
std::optional<std::string> parse_int(const std::string& text, std::int64_t lo,
                                     std::int64_t hi, std::int64_t& out) {
  if (text.empty())
    return "expected an integer, got an empty value";
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0')
    return "expected an integer, got \"" + text + "\"";
  if (v < lo || v > hi)
    return "must be between " + std::to_string(lo) + " and " +
           std::to_string(hi) + ", got " + text;
  out = v;
  return std::nullopt;
}

template <class Int>
option int_opt(std::string key, field_ref<Int> field, std::int64_t lo,
               std::int64_t hi, std::string description) {
  option o;
  o.key = std::move(key);
  o.description = std::move(description);
  o.type = value_type::integer;
  o.apply = [field, lo, hi](settings& s, const std::string& v) {
    std::int64_t parsed = 0;
    if (auto err = parse_int(v, lo, hi, parsed))
      return err;
    field(s) = static_cast<Int>(parsed);
    return std::optional<std::string>{};
  };
  o.render = [field](const settings& s) {
    return std::to_string(field(const_cast<settings&>(s)));
  };
  return o;
}

using string_check = std::optional<std::string> (*)(const std::string&);

option str_opt(std::string key, field_ref<std::string> field,
               string_check check, std::string description) {
  option o;
  o.key = std::move(key);
  o.description = std::move(description);
  o.apply = [field, check](settings& s, const std::string& v) {
    if (check)
      if (auto err = check(v))
        return err;
    field(s) = v;
    return std::optional<std::string>{};
  };
  o.render = [field](const settings& s) {
    return field(const_cast<settings&>(s));
  };
  return o;
}

std::optional<std::string> non_empty(const std::string& v) {
  if (v.empty())
    return std::optional<std::string>{"must not be empty"};
  return std::nullopt;
}

std::optional<std::string> log_level(const std::string& v) {
  static const std::set<std::string> levels{"trace", "debug", "info",
                                            "warn",  "error", "off"};
  if (levels.count(v) == 0)
    return std::optional<std::string>{
      "must be one of trace, debug, info, warn, error, off; got \"" + v + "\""};
  return std::nullopt;
}

std::optional<std::string> topic_name(const std::string& v) {
  if (v.empty() || v.size() > 249)
    return std::optional<std::string>{"must be 1 to 249 characters"};
  for (char c : v)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
          c == '-'))
      return std::optional<std::string>{
        "may contain only [a-zA-Z0-9._-], got \"" + v + "\""};
  return std::nullopt;
}

using name_check =
  std::function<std::optional<std::string>(const std::string&)>;

/// A comma-separated list of names, each accepted by `check`, none twice.
/// Empty entries are skipped, so "" is the empty list.
option list_opt(std::string key, field_ref<std::vector<std::string>> field,
                name_check check, std::string description) {
  option o;
  o.key = key;
  o.description = std::move(description);
  o.apply = [field, check](settings& s, const std::string& v) {
    std::vector<std::string> names;
    std::stringstream in(v);
    std::string name;
    while (std::getline(in, name, ',')) {
      if (name.empty())
        continue;
      if (auto err = check(name))
        return err;
      if (std::find(names.begin(), names.end(), name) != names.end())
        return std::optional<std::string>{"\"" + name + "\" listed twice"};
      names.push_back(name);
    }
    field(s) = std::move(names);
    return std::optional<std::string>{};
  };
  o.render = [field](const settings& s) {
    std::string out;
    for (auto& n : field(const_cast<settings&>(s)))
      out += (out.empty() ? "" : ",") + n;
    return out;
  };
  return o;
}

/// A name from a fixed set (chaos.points: the crash points that exist).
name_check one_of(std::vector<std::string> known) {
  return [known](const std::string& name) -> std::optional<std::string> {
    if (std::find(known.begin(), known.end(), name) != known.end())
      return std::nullopt;
    std::string all;
    for (auto& k : known)
      all += (all.empty() ? "" : ", ") + k;
    return "unknown name \"" + name + "\" (known: " + all + ")";
  };
}

/// A well-formed consumer name. Which names exist is not known here: a host
/// registers its own consumers, and ef::start refuses an unregistered one.
std::optional<std::string> consumer_name(const std::string& name) {
  for (char c : name)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
      return "invalid name \"" + name +
             "\" (use lowercase letters, digits, '_' and '-')";
  return std::nullopt;
}

option probability_opt(std::string key, field_ref<double> field,
                       std::string description);

/// A share in [0, 1] (a jitter).
option share_opt(std::string key, field_ref<double> field,
                 std::string description) {
  return probability_opt(std::move(key), field, std::move(description));
}

option probability_opt(std::string key, field_ref<double> field,
                       std::string description) {
  option o;
  o.key = std::move(key);
  o.description = std::move(description);
  o.type = value_type::real;
  o.apply = [field](settings& s, const std::string& v) {
    errno = 0;
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || errno != 0 || *end != '\0')
      return std::optional<std::string>{"expected a number, got \"" + v + "\""};
    if (!(d >= 0.0 && d <= 1.0))
      return std::optional<std::string>{"must be between 0 and 1, got " + v};
    field(s) = d;
    return std::optional<std::string>{};
  };
  o.render = [field](const settings& s) {
    std::ostringstream out;
    out << field(const_cast<settings&>(s));
    return out.str();
  };
  return o;
}

/// true or false, nothing else: a typo must not silently mean "off".
option bool_opt(std::string key, field_ref<bool> field,
                std::string description) {
  option o;
  o.key = std::move(key);
  o.description = std::move(description);
  o.type = value_type::boolean;
  o.apply = [field](settings& s, const std::string& v) {
    if (v != "true" && v != "false")
      return std::optional<std::string>{"must be true or false, got \"" + v +
                                        "\""};
    field(s) = v == "true";
    return std::optional<std::string>{};
  };
  o.render = [field](const settings& s) {
    return std::string(field(const_cast<settings&>(s)) ? "true" : "false");
  };
  return o;
}

constexpr std::int64_t max_int = std::numeric_limits<int>::max();

std::vector<option> make_options() {
  std::vector<option> v;
  // -- http ----------------------------------------------------------------
  v.push_back(str_opt(
    "http.host", [](settings& s) -> std::string& { return s.http.host; },
    non_empty, "address the HTTP API binds to"));
  v.push_back(int_opt<int>(
    "http.port", [](settings& s) -> int& { return s.http.port; }, 0, 65535,
    "HTTP API port; 0 picks a free port (printed in the ready line)"));
  v.push_back(int_opt<std::int64_t>(
    "http.max-body-bytes",
    [](settings& s) -> std::int64_t& { return s.http.max_body_bytes; }, 1,
    64 * 1024 * 1024, "largest accepted request body; larger gets 413"));
  v.push_back(int_opt<int>(
    "http.max-header-bytes",
    [](settings& s) -> int& { return s.http.max_header_bytes; }, 1024,
    1024 * 1024, "largest request line plus headers; larger gets 431"));
  v.push_back(int_opt<int>(
    "http.threads", [](settings& s) -> int& { return s.http.threads; }, 1, 64,
    "HTTP I/O threads; connections do not hold one while idle or waiting "
    "for the actors"));
  v.push_back(int_opt<int>(
    "http.header-timeout-ms",
    [](settings& s) -> int& { return s.http.header_timeout_ms; }, 100, 600000,
    "longest a client may take to send a request's headers, and its body "
    "(a slow client is cut off)"));
  v.push_back(int_opt<int>(
    "http.idle-timeout-ms",
    [](settings& s) -> int& { return s.http.idle_timeout_ms; }, 100, 3600000,
    "how long a kept-alive connection may wait for its next request"));
  v.push_back(int_opt<int>(
    "http.max-connections",
    [](settings& s) -> int& { return s.http.max_connections; }, 1, 1000000,
    "connections served at once; one more is answered 503 and closed. "
    "Checked at start against RLIMIT_NOFILE (raised to the hard limit if "
    "needed), which must also hold what the process has open plus 64"));
  v.push_back(int_opt<int>(
    "http.request-timeout-ms",
    [](settings& s) -> int& { return s.http.request_timeout_ms; }, 100, 600000,
    "deadline of a create or cancel: one not committed within this is not "
    "written at all and answered 503 with \"written\": false; a read waits "
    "this long for its answer"));
  v.push_back(str_opt(
    "http.admin-token",
    [](settings& s) -> std::string& { return s.http.admin_token; }, nullptr,
    "bearer token for /admin endpoints as [NAME:]SECRET (NAME is recorded "
    "with each action); empty: admin endpoints off. A command line shows it "
    "to ps: prefer http.admin-token-file or EVENTFORGE_ADMIN_TOKEN"));
  v.push_back(str_opt(
    "http.admin-token-file",
    [](settings& s) -> std::string& { return s.http.admin_token_file; },
    nullptr,
    "file whose first line is the admin token (keep it mode 0600); read at "
    "start. Without it and without http.admin-token, the environment "
    "variable EVENTFORGE_ADMIN_TOKEN is used"));
  // -- database ------------------------------------------------------------
  v.push_back(str_opt(
    "database.url", [](settings& s) -> std::string& { return s.database.url; },
    nullptr,
    "libpq connection string; empty starts a private PostgreSQL cluster"));
  v.push_back(str_opt(
    "database.data-dir",
    [](settings& s) -> std::string& { return s.database.data_dir; }, non_empty,
    "data directory of the private cluster (used when database.url is "
    "empty)"));
  v.push_back(str_opt(
    "database.pg-bin-dir",
    [](settings& s) -> std::string& { return s.database.pg_bin_dir; },
    non_empty, "where initdb and postgres live (private cluster only)"));
  v.push_back(int_opt<int>(
    "database.port", [](settings& s) -> int& { return s.database.port; }, 0,
    65535, "port of the private cluster; 0 picks a free one"));
  v.push_back(bool_opt(
    "database.durable", [](settings& s) -> bool& { return s.database.durable; },
    "the private cluster flushes every commit to disk (fsync, full-page "
    "writes); false is for tests and throwaway runs: commits then survive a "
    "process crash but not an operating-system crash, which can also "
    "corrupt the cluster"));
  v.push_back(int_opt<int>(
    "database.connect-timeout-s",
    [](settings& s) -> int& { return s.database.connect_timeout_s; }, 1, 600,
    "libpq connect_timeout, bounds how long an outage blocks a request"));
  // -- kafka ---------------------------------------------------------------
  v.push_back(str_opt(
    "kafka.brokers",
    [](settings& s) -> std::string& { return s.kafka.brokers; }, nullptr,
    "bootstrap servers; empty starts an in-process broker"));
  v.push_back(str_opt(
    "kafka.properties-file",
    [](settings& s) -> std::string& { return s.kafka.properties_file; },
    nullptr,
    "file of librdkafka properties (key=value per line, # comments, as kcat "
    "-F reads) that every Kafka client gets: security.protocol, "
    "sasl.mechanisms, sasl.username, sasl.password, ssl.ca.location, ...; "
    "keep it mode 0600. Read at start, after it the environment: "
    "EVENTFORGE_KAFKA_PROPERTY_SASL_PASSWORD sets sasl.password"));
  v.push_back(str_opt(
    "kafka.topic", [](settings& s) -> std::string& { return s.kafka.topic; },
    topic_name, "topic the order events are published to"));
  v.push_back(int_opt<int>(
    "kafka.partitions", [](settings& s) -> int& { return s.kafka.partitions; },
    1, 1000,
    "partitions of the order and DLQ topics: what `eventforge topics "
    "create` creates and checks, and what the in-process broker creates"));
  v.push_back(int_opt<int>(
    "kafka.replication-factor",
    [](settings& s) -> int& { return s.kafka.replication_factor; }, 1, 100,
    "replicas of each partition of the order and DLQ topics that "
    "`eventforge topics create` creates and checks (at most the cluster's "
    "brokers); the in-process broker keeps one per broker, at most 3"));
  v.push_back(int_opt<int>(
    "kafka.min-insync-replicas",
    [](settings& s) -> int& { return s.kafka.min_insync_replicas; }, 0, 100,
    "the topics' min.insync.replicas (`topics create`): replicas an "
    "acks=all write waits for; at most kafka.replication-factor; 0: "
    "kafka.replication-factor - 1, at least 1"));
  v.push_back(int_opt<std::int64_t>(
    "kafka.retention-bytes",
    [](settings& s) -> std::int64_t& { return s.kafka.retention_bytes; }, -1,
    std::numeric_limits<std::int64_t>::max(),
    "the topics' retention.bytes per partition (`topics create`); -1: no "
    "limit. relay.max-lead-bytes derives from it"));
  v.push_back(int_opt<std::int64_t>(
    "kafka.retention-ms",
    [](settings& s) -> std::int64_t& { return s.kafka.retention_ms; }, -1,
    std::numeric_limits<std::int64_t>::max(),
    "the topics' retention.ms (`topics create`); -1: forever. A consumer "
    "down longer than this is repaired from the outbox "
    "(outbox.retention)"));
  v.push_back(int_opt<int>(
    "kafka.embedded-brokers",
    [](settings& s) -> int& { return s.kafka.embedded_brokers; }, 1, 10,
    "brokers in the in-process cluster"));
  v.push_back(int_opt<int>(
    "kafka.session-timeout-ms",
    [](settings& s) -> int& { return s.kafka.session_timeout_ms; }, 1000,
    300000, "consumer group session timeout (also paces rebalances)"));
  v.push_back(int_opt<int>(
    "kafka.delivery-timeout-ms",
    [](settings& s) -> int& { return s.kafka.delivery_timeout_ms; }, 1000,
    max_int, "producer message.timeout.ms: when an unacked send fails"));
  v.push_back(int_opt<int>(
    "kafka.fetch-wait-max-ms",
    [](settings& s) -> int& { return s.kafka.fetch_wait_max_ms; }, 1, 60000,
    "longest a fetch waits for new records: the consumer latency floor on "
    "the in-process broker, which answers an empty fetch only after this "
    "wait; a real broker answers as soon as records arrive"));
  v.push_back(int_opt<int>(
    "kafka.dlq-fetch-wait-ms",
    [](settings& s) -> int& { return s.kafka.dlq_fetch_wait_ms; }, 1, 60000,
    "longest a fetch of the DLQ topic waits for new records: a parked event "
    "waits for an operator, so a long wait costs nothing; on the in-process "
    "broker a short one is that many idle fetches a second"));
  v.push_back(int_opt<int>(
    "kafka.statistics-interval-ms",
    [](settings& s) -> int& { return s.kafka.statistics_interval_ms; }, 0,
    3600000,
    "how often every Kafka client reports its statistics (its broker "
    "connections, requests waiting, records queued, its group): the "
    "kafka_* series, /readyz and `eventforge status` read them; 0 turns "
    "them off"));
  v.push_back(int_opt<int>(
    "kafka.park-idle-ms",
    [](settings& s) -> int& { return s.kafka.park_idle_ms; }, 0, 3600000,
    "a partition read to its end that gets no record for this long stops "
    "fetching (no idle fetch every kafka.fetch-wait-max-ms) until a relay "
    "announces that it published there (NOTIFY outbox_published). A relay "
    "does not announce a partition it published to less than half of this "
    "ago: no consumer can have parked it since. 0: never park"));
  v.push_back(int_opt<int>(
    "kafka.park-recheck-ms",
    [](settings& s) -> int& { return s.kafka.park_recheck_ms; }, 100, 3600000,
    "parked partitions fetch once this often all the same: the longest a "
    "record no relay announced (a DLQ replay, another producer, a lost "
    "signal) waits"));
  v.push_back(list_opt(
    "kafka.debug-contexts",
    [](settings& s) -> std::vector<std::string>& {
      return s.kafka.debug_contexts;
    },
    one_of({"generic", "broker",      "topic",    "metadata", "feature",
            "queue",   "msg",         "protocol", "cgrp",     "security",
            "fetch",   "interceptor", "plugin",   "consumer", "admin",
            "eos",     "mock",        "assignor", "conf",     "all"}),
    "librdkafka debug contexts (e.g. fetch,consumer,cgrp,topic) whose "
    "lines a consumer group member keeps in memory (the last 5,000) and "
    "logs when a partition's fetch stalls; empty: off (they cost CPU)"));
  v.push_back(list_opt(
    "kafka.debug-consumers",
    [](settings& s) -> std::vector<std::string>& {
      return s.kafka.debug_consumers;
    },
    consumer_name,
    "the consumers whose members keep kafka.debug-contexts (empty: all)"));
  v.push_back(str_opt(
    "kafka.dlq-topic",
    [](settings& s) -> std::string& { return s.kafka.dlq_topic; },
    [](const std::string& v) {
      return v.empty() ? std::optional<std::string>{} : topic_name(v);
    },
    "dead-letter topic; empty: <kafka.topic>.dlq"));
  // -- api -----------------------------------------------------------------
  v.push_back(int_opt<int>(
    "api.workers", [](settings& s) -> int& { return s.api.workers; }, 1, 64,
    "API actors, each with its own database connection"));
  v.push_back(int_opt<int>(
    "api.batch-max", [](settings& s) -> int& { return s.api.batch_max; }, 1,
    10000,
    "most order commands one API actor commits in one transaction (group "
    "commit); 1 turns batching off"));
  v.push_back(int_opt<int>(
    "api.batch-wait-us",
    [](settings& s) -> int& { return s.api.batch_wait_us; }, 0, 60000000,
    "how long an API actor waits for more commands before committing; 0 "
    "commits as soon as no more are queued (they gather while the previous "
    "transaction runs)"));
  v.push_back(int_opt<int>(
    "api.idempotency-retention",
    [](settings& s) -> int& { return s.api.idempotency_retention_s; }, 0,
    max_int,
    "seconds an Idempotency-Key is kept after its order was created; a "
    "request with an older key is a new request (a new order). 0 keeps "
    "them forever. Keep it longer than any client retries"));
  // -- relay ---------------------------------------------------------------
  v.push_back(int_opt<int>(
    "relay.shards", [](settings& s) -> int& { return s.relay.shards; }, 1, 1024,
    "outbox shards; one relay actor per shard, owned cluster-wide"));
  v.push_back(int_opt<int>(
    "relay.batch-size", [](settings& s) -> int& { return s.relay.batch_size; },
    1, 100000, "unsent rows claimed and published per round"));
  v.push_back(int_opt<int>(
    "relay.poll-interval-ms",
    [](settings& s) -> int& { return s.relay.poll_interval_ms; }, 10, 3600000,
    "fallback poll when no NOTIFY arrives (every insert and requeue "
    "NOTIFYs the relay of its shard: this is only the safety net)"));
  v.push_back(int_opt<int>(
    "relay.publish-backoff-ms",
    [](settings& s) -> int& { return s.relay.publish_backoff_ms; }, 0, 600000,
    "first wait before a relay publishes again after the broker refused "
    "rows of a batch; doubles up to relay.publish-backoff-max-ms"));
  v.push_back(int_opt<int>(
    "relay.publish-backoff-max-ms",
    [](settings& s) -> int& { return s.relay.publish_backoff_max_ms; }, 0,
    3600000, "longest wait between a relay's publish attempts"));
  v.push_back(int_opt<int>(
    "relay.max-in-flight",
    [](settings& s) -> int& { return s.relay.max_in_flight; }, 1, 1000000,
    "rows a relay has sent and not yet seen acknowledged; rows bound for a "
    "partition whose leader does not answer wait within this window while "
    "the other partitions' rows publish"));
  v.push_back(int_opt<std::int64_t>(
    "relay.max-lead-bytes",
    [](settings& s) -> std::int64_t& { return s.relay.max_lead_bytes; }, -1,
    std::numeric_limits<std::int64_t>::max(),
    "bytes of events a partition may hold beyond the slowest enabled "
    "consumer's committed offset before the relays wait (the outbox keeps "
    "the rest), so no unread record is trimmed and repairs cannot outrun "
    "the consumers. -1: 80 % of the topic's retention.bytes as the broker "
    "describes it (the in-process broker: of its 5 MiB log per partition), "
    "no limit when retention.bytes is unlimited, 2 MiB when the broker does "
    "not say; 0: no limit"));
  // -- repair --------------------------------------------------------------
  v.push_back(int_opt<int>(
    "repair.interval-ms",
    [](settings& s) -> int& { return s.repair.interval_ms; }, 50, 3600000,
    "how often the repairer checks that the broker still holds what the "
    "outbox published, and queues again what a consumer can no longer read"));
  // -- metrics -------------------------------------------------------------
  v.push_back(int_opt<int>(
    "metrics.sample-interval-ms",
    [](settings& s) -> int& { return s.metrics.sample_interval_ms; }, 100,
    3600000,
    "how often the outbox, DLQ and consumer-lag gauges are read from the "
    "database and the broker (the lag at most every 5 s: each read makes a "
    "Kafka client); /metrics serves the last sample, so a scrape never "
    "queries them itself"));
  // -- shutdown ------------------------------------------------------------
  v.push_back(int_opt<int>(
    "shutdown.drain-timeout-ms",
    [](settings& s) -> int& { return s.shutdown.drain_timeout_ms; }, 0, 3600000,
    "on SIGTERM: how long relays may finish their batch and consumers apply "
    "and commit what they hold before the process stops anyway"));
  // -- consumer ------------------------------------------------------------
  v.push_back(list_opt(
    "consumer.enabled",
    [](settings& s) -> std::vector<std::string>& { return s.consumer.enabled; },
    consumer_name,
    "comma-separated names of the consumers to run (built in: fulfillment, "
    "billing; a host may register its own)"));
  v.push_back(int_opt<int>(
    "consumer.max-in-flight",
    [](settings& s) -> int& { return s.consumer.max_in_flight; }, 1, 100000,
    "records handed to a partition actor before its partition is paused"));
  v.push_back(int_opt<int>(
    "consumer.batch-max",
    [](settings& s) -> int& { return s.consumer.batch_max; }, 1, 10000,
    "most consecutive records of a partition applied in one transaction "
    "(each behind its own idempotency mark); 1 applies one per transaction"));
  v.push_back(int_opt<int>(
    "consumer.max-attempts",
    [](settings& s) -> int& { return s.consumer.max_attempts; }, 1, 1000,
    "attempts for a record with transient failures before it goes to the "
    "DLQ (permanent failures go at once)"));
  v.push_back(int_opt<int>(
    "consumer.backoff-initial-ms",
    [](settings& s) -> int& { return s.consumer.backoff_initial_ms; }, 1, 60000,
    "first delay before retrying a record that could not be applied yet"));
  v.push_back(int_opt<int>(
    "consumer.backoff-max-ms",
    [](settings& s) -> int& { return s.consumer.backoff_max_ms; }, 1, 3600000,
    "largest delay between retries of one record"));
  v.push_back(share_opt(
    "consumer.backoff-jitter",
    [](settings& s) -> double& { return s.consumer.backoff_jitter; },
    "share of each retry delay that is random (0: none; 0.5: half fixed, "
    "half random), so partitions hit by one outage do not retry in "
    "lockstep"));
  // -- retention -----------------------------------------------------------
  v.push_back(int_opt<int>(
    "outbox.retention",
    [](settings& s) -> int& { return s.retention.outbox_s; }, 0, max_int,
    "seconds after its creation a SENT outbox row is deleted; 0 keeps them "
    "forever (unsent rows are never deleted). Also the repair window: a "
    "consumer down longer than this cannot be repaired from the outbox"));
  v.push_back(int_opt<int>(
    "processed-events.retention",
    [](settings& s) -> int& { return s.retention.processed_events_s; }, 0,
    max_int,
    "seconds an applied processed_events mark is kept, and never while its "
    "outbox row exists; a discard's mark is kept for good. 0 keeps them "
    "forever. Must be 0 or at least outbox.retention (a row without its "
    "mark would be republished and applied twice), and exceed the broker's "
    "retention (a group that starts over at the log start meets its "
    "records again)"));
  v.push_back(int_opt<int>(
    "dlq.retention",
    [](settings& s) -> int& { return s.retention.dlq_resolved_s; }, 0, max_int,
    "seconds a replayed or discarded DLQ entry keeps its record's bytes and "
    "its actions after it was resolved; then they are pruned, while the "
    "entry and its decision stay for good (a discard is also a mark in "
    "processed_events). Parked and replaying entries are never pruned. 0 "
    "keeps everything forever"));
  v.push_back(int_opt<int>(
    "dlq.replay-give-up-ms",
    [](settings& s) -> int& { return s.dlq.replay_give_up_ms; }, 1000, max_int,
    "milliseconds after which a replay whose publish no broker acknowledged "
    "(a topic gone, an ACL that refuses) is parked again with its last "
    "error, for an operator to decide anew; until then the DLQ handler "
    "publishes it again every 5 s once its delivery timeout passed"));
  v.push_back(str_opt(
    "node.name", [](settings& s) -> std::string& { return s.node.name; },
    [](const std::string& v) -> std::optional<std::string> {
      if (v.size() > 50)
        return "at most 50 characters";
      for (unsigned char c : v)
        if (c < 0x21 || c > 0x7E)
          return "visible ASCII characters only";
      return std::nullopt;
    },
    "this process's name among the nodes that share one database and "
    "cluster (up to 50 characters): its database sessions carry it, so "
    "`status` names the node that owns each relay shard; empty: the host "
    "name and http.port"));
  v.push_back(int_opt<int>(
    "retention.batch-size",
    [](settings& s) -> int& { return s.retention.batch_size; }, 1, 1000000,
    "rows deleted per janitor transaction (keeps locks short)"));
  v.push_back(int_opt<int>(
    "retention.interval-ms",
    [](settings& s) -> int& { return s.retention.interval_ms; }, 10, max_int,
    "pause between janitor rounds once nothing is left to delete"));
  // -- supervisor ----------------------------------------------------------
  v.push_back(int_opt<int>(
    "supervisor.max-restarts",
    [](settings& s) -> int& { return s.supervisor.max_restarts; }, 0, 1000000,
    "restarts allowed within supervisor.restart-window-s before escalating"));
  v.push_back(int_opt<int>(
    "supervisor.restart-window-s",
    [](settings& s) -> int& { return s.supervisor.restart_window_s; }, 1, 86400,
    "window for supervisor.max-restarts"));
  v.push_back(int_opt<int>(
    "supervisor.restart-backoff-ms",
    [](settings& s) -> int& { return s.supervisor.restart_backoff_ms; }, 0,
    60000,
    "delay before a crashed actor is started again the first time; it "
    "doubles with each crash in a row, up to "
    "supervisor.restart-backoff-max-ms"));
  v.push_back(int_opt<int>(
    "supervisor.restart-backoff-max-ms",
    [](settings& s) -> int& { return s.supervisor.restart_backoff_max_ms; }, 0,
    3600000, "longest delay before a crashed actor is started again"));
  v.push_back(share_opt(
    "supervisor.restart-backoff-jitter",
    [](settings& s) -> double& { return s.supervisor.restart_backoff_jitter; },
    "share of each restart delay that is random (0: none)"));
  v.push_back(int_opt<int>(
    "supervisor.restart-healthy-after-ms",
    [](settings& s) -> int& { return s.supervisor.restart_healthy_after_ms; },
    0, 3600000,
    "a child that stayed up this long was healthy: its next crash waits "
    "supervisor.restart-backoff-ms again"));
  // -- chaos ---------------------------------------------------------------
  v.push_back(list_opt(
    "chaos.points",
    [](settings& s) -> std::vector<std::string>& { return s.chaos.points; },
    one_of({crash_point_names.begin(), crash_point_names.end()}),
    "crash points to enable (comma-separated); empty: chaos off"));
  v.push_back(probability_opt(
    "chaos.rate", [](settings& s) -> double& { return s.chaos.rate; },
    "probability that an enabled point crashes its actor per evaluation"));
  v.push_back(int_opt<std::uint64_t>(
    "chaos.seed", [](settings& s) -> std::uint64_t& { return s.chaos.seed; }, 0,
    std::numeric_limits<std::int64_t>::max(),
    "seed of the deterministic crash decisions"));
  v.push_back(int_opt<int>(
    "chaos.max-crashes-per-event",
    [](settings& s) -> int& { return s.chaos.max_crashes_per_event; }, 1, 1000,
    "crashes one point may inject for one event before it lets it pass"));
  // -- demo ----------------------------------------------------------------
  v.push_back(bool_opt(
    "demo.enabled", [](settings& s) -> bool& { return s.demo.enabled; },
    "allow the recovery page's scenarios (they place orders and crash actors "
    "on purpose) without the admin token; keep false on a shared system"));
  // -- log -----------------------------------------------------------------
  v.push_back(str_opt(
    "log.level", [](settings& s) -> std::string& { return s.log.level; },
    log_level, "trace, debug, info, warn, error or off"));
  v.push_back(str_opt(
    "log.format", [](settings& s) -> std::string& { return s.log.format; },
    [](const std::string& v) {
      return v == "text" || v == "json"
               ? std::optional<std::string>{}
               : std::optional<std::string>{"must be text or json, got \"" + v +
                                            "\""};
    },
    "text, or json: one JSON object per line with order_id, event_id and "
    "trace_id on every line about an event"));
  return v;
}

} // namespace

const std::vector<option>& options() {
  static const std::vector<option> table = make_options();
  return table;
}

namespace {

/// Every key of the option table, for "did you mean".
const std::vector<std::string>& option_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (auto& o : options())
      out.push_back(o.key);
    return out;
  }();
  return names;
}

} // namespace

const option* find_option(const std::string& key) {
  auto& table = options();
  auto i = std::find_if(table.begin(), table.end(),
                        [&](const option& o) { return o.key == key; });
  return i == table.end() ? nullptr : &*i;
}

namespace {

/// Stores one value in `s`, or says why not, naming the key.
std::optional<std::string> apply_value(settings& s, const std::string& key,
                                       const std::string& value) {
  auto* o = find_option(key);
  if (o == nullptr)
    return "unknown config key \"" + key + "\"" +
           did_you_mean(key, option_names());
  if (auto err = o->apply(s, value))
    return "invalid value for " + key + ": " + *err;
  return std::nullopt;
}

} // namespace

namespace {

/// Fills http.admin_token from http.admin-token-file or, when no token is
/// configured at all, from EVENTFORGE_ADMIN_TOKEN: so the token need never
/// be on a command line, which every user of the machine can read.
std::optional<std::string> resolve_admin_token(settings& s) {
  auto& h = s.http;
  if (!h.admin_token_file.empty()) {
    if (!h.admin_token.empty())
      return "http.admin-token and http.admin-token-file are both set; set "
             "one of them";
    std::ifstream in(h.admin_token_file);
    if (!in)
      return "cannot read http.admin-token-file " + h.admin_token_file + ": " +
             std::strerror(errno);
    std::getline(in, h.admin_token);
    while (!h.admin_token.empty() &&
           std::isspace(static_cast<unsigned char>(h.admin_token.back())))
      h.admin_token.pop_back();
    if (h.admin_token.empty())
      return "http.admin-token-file " + h.admin_token_file + " is empty";
    return std::nullopt;
  }
  if (h.admin_token.empty())
    if (auto* env = std::getenv("EVENTFORGE_ADMIN_TOKEN"); env && *env)
      h.admin_token = env;
  return std::nullopt;
}

/// Fills kafka.properties from kafka.properties-file, then from the
/// environment (EVENTFORGE_KAFKA_PROPERTY_SASL_PASSWORD -> sasl.password),
/// so a secret need never be in a config file others can read or on a
/// command line. Says which file line is wrong, never what it holds.
std::optional<std::string> resolve_kafka_properties(settings& s) {
  auto& k = s.kafka;
  if (!k.properties_file.empty()) {
    std::ifstream in(k.properties_file);
    if (!in)
      return "cannot read kafka.properties-file " + k.properties_file + ": " +
             std::strerror(errno);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      auto trim = [](std::string t) {
        auto b = t.find_first_not_of(" \t\r");
        if (b == std::string::npos)
          return std::string{};
        return t.substr(b, t.find_last_not_of(" \t\r") - b + 1);
      };
      auto t = trim(line);
      if (t.empty() || t[0] == '#')
        continue;
      auto eq = t.find('=');
      auto where =
        "kafka.properties-file " + k.properties_file + ":" + std::to_string(n);
      if (eq == std::string::npos)
        return where + ": expected key=value";
      auto key = trim(t.substr(0, eq));
      if (key.empty())
        return where + ": the key before '=' is empty";
      k.properties[key] = trim(t.substr(eq + 1));
    }
  }
  static const std::string prefix = "EVENTFORGE_KAFKA_PROPERTY_";
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (entry.compare(0, prefix.size(), prefix) != 0 || eq == std::string::npos)
      continue;
    auto name = entry.substr(prefix.size(), eq - prefix.size());
    if (name.empty())
      continue;
    for (auto& c : name)
      c = c == '_'
            ? '.'
            : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    k.properties[name] = entry.substr(eq + 1);
  }
  return std::nullopt;
}

} // namespace

std::string default_node_name(const settings& s) {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
    std::snprintf(host, sizeof(host), "localhost");
  auto name = std::string(host).substr(0, 40);
  return s.http.port != 0
           ? name + ":" + std::to_string(s.http.port)
           : name + ":pid" + std::to_string(static_cast<long>(::getpid()));
}

std::optional<std::string> read_referenced_files(settings& s) {
  if (auto token = resolve_admin_token(s))
    return token;
  if (auto props = resolve_kafka_properties(s))
    return props;
  // Read: their contents are in the settings now, so reading again (a host
  // that hands read settings to ef::start) changes nothing.
  s.http.admin_token_file.clear();
  s.kafka.properties_file.clear();
  return std::nullopt;
}

settings with_referenced_files(const settings& s) {
  auto out = s;
  if (auto err = read_referenced_files(out))
    throw std::invalid_argument(*err);
  return out;
}

build_result build_settings(const raw_values& values) {
  build_result r;
  for (auto& [key, value] : values)
    if (auto err = apply_value(r.value, key, value)) {
      r.error = *err;
      return r;
    }
  if (auto err = validate(r.value))
    r.error = *err;
  else if (auto files = read_referenced_files(r.value))
    r.error = *files;
  return r;
}

std::optional<std::string> check_value(const std::string& key,
                                       const std::string& value) {
  settings scratch;
  return apply_value(scratch, key, value);
}

std::optional<std::string> check_settings(const settings& s) {
  // Each value as the CLI would have read it: rendered, then applied as
  // given on a command line, so the checks and their words are the same.
  for (auto& o : options()) {
    settings scratch;
    if (auto err = apply_value(scratch, o.key, o.render(s)))
      return err;
  }
  return validate(s);
}

bool is_loopback(const std::string& host) {
  if (host == "localhost")
    return true;
  auto h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']')
    h = h.substr(1, h.size() - 2);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6))
      return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

namespace {

/// A repair republishes an outbox row that its consumer neither marked nor
/// parked. So what tells "already applied" (a mark) must outlive the row:
/// `key`'s retention `value` (0 = forever) must be 0 or at least
/// outbox.retention. `what_goes` says what goes wrong otherwise.
std::optional<std::string> outlives_rows(const char* key, int value,
                                         int outbox_s, const char* rows,
                                         const char* what_goes) {
  if (value == 0 || (outbox_s != 0 && value >= outbox_s))
    return std::nullopt;
  return std::string("invalid value for ") + key + ": " +
         std::to_string(value) + " s is shorter than outbox.retention (" +
         (outbox_s == 0 ? std::string("0 = forever")
                        : std::to_string(outbox_s) + " s") +
         "); " + what_goes + ". Keep " + rows +
         " at least as long as rows (or 0 = forever)";
}

} // namespace

std::optional<std::string> validate(const settings& s) {
  auto& r = s.retention;
  // Scenarios place orders and crash actors on purpose, without a token:
  // only a client on this machine may ask for them.
  if (s.demo.enabled && !is_loopback(s.http.host))
    return "invalid value for demo.enabled: true needs http.host on a "
           "loopback address (127.0.0.1, ::1 or localhost), got \"" +
           s.http.host +
           "\": the recovery page's scenarios place orders and crash actors "
           "on purpose; on a shared address set http.admin-token instead";
  if (s.consumer.backoff_max_ms < s.consumer.backoff_initial_ms)
    return "invalid value for consumer.backoff-max-ms: must be >= "
           "consumer.backoff-initial-ms";
  if (s.supervisor.restart_backoff_max_ms < s.supervisor.restart_backoff_ms)
    return "invalid value for supervisor.restart-backoff-max-ms: must be >= "
           "supervisor.restart-backoff-ms";
  if (s.kafka.min_insync_replicas > s.kafka.replication_factor)
    return "invalid value for kafka.min-insync-replicas: " +
           std::to_string(s.kafka.min_insync_replicas) +
           " exceeds kafka.replication-factor (" +
           std::to_string(s.kafka.replication_factor) +
           "): no acks=all write could succeed";
  if (s.relay.publish_backoff_max_ms < s.relay.publish_backoff_ms)
    return "invalid value for relay.publish-backoff-max-ms: must be >= "
           "relay.publish-backoff-ms";
  return outlives_rows(
    "processed-events.retention", r.processed_events_s, r.outbox_s, "marks",
    "an outbox row whose mark is gone would be republished and applied "
    "twice");
}

} // namespace ef::config
