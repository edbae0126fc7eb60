#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ef::persistence {

// What the live recovery page reads from durable state: one order's story
// (trace) and the system's totals (overview). Timestamps are RFC 3339 UTC
// text with microseconds, so they sort as text.

/// One delivery of an event to a consumer, as durable state records it.
struct traced_delivery {
  std::string at;
  int partition = -1;    ///< -1: not recorded
  long long offset = -1; ///< -1: not recorded
  std::string outcome;   ///< applied | suppressed | rolled_back | parked
  std::string point;     ///< the crash point of a rolled-back delivery
};

struct traced_effect {
  std::string at;
  std::string kind;
  long long amount_cents = 0;
};

struct traced_dlq_entry {
  long long id = 0;
  std::string status;
  std::string error_class;
  int attempts = 0;
  std::string parked_at;
  std::string resolved_at; ///< "" while parked
  int source_partition = -1;
  long long source_offset = -1;
  /// Where the last acknowledged replay copy landed (-1: none yet).
  int replay_partition = -1;
  long long replay_offset = -1;
};

/// One consumer's view of one event.
struct traced_consumer {
  bool processed = false;
  std::vector<traced_delivery> deliveries; ///< sorted by time
  std::vector<traced_effect> effects;
  std::optional<traced_dlq_entry> dlq;
};

struct traced_event {
  std::string event_id;
  std::string event_type;
  long long seq = 0;
  int shard = 0;
  std::string traceparent;
  std::string created_at;
  std::string sent_at; ///< "" while unsent
  int publish_attempts = 0;
  int republish_count = 0;
  std::string last_error;
  int epoch = -1;
  int partition = -1;
  long long offset = -1;
  std::map<std::string, traced_consumer> consumers;
};

/// A line of the recovery journal that belongs to the order (crashes,
/// suppressed deliveries, client retries) or follows one of its crashes (the
/// supervisor's restart of the crashed actor).
struct traced_incident {
  std::string at;
  std::string kind;
  std::string point;
  std::string actor;
  std::string consumer;
  std::string event_id;
  std::string detail;
};

struct order_trace_rows {
  bool found = false;
  std::string order_id;
  std::string status;
  std::string customer_id;
  long long total_cents = 0;
  std::string created_at;
  std::string updated_at;
  std::vector<traced_event> events;       ///< in outbox order
  std::vector<traced_incident> incidents; ///< sorted by time
};

/// Reads one order's trace for the named consumers (throws db_error).
order_trace_rows read_order_trace(const std::string& dsn,
                                  const std::string& order_id,
                                  const std::vector<std::string>& consumers);

/// Totals over everything retention keeps.
struct overview_rows {
  long long orders = 0;
  long long logical_events = 0;
  struct per_consumer {
    long long processed = 0;
    long long business_changes = 0;
    long long suppressed = 0;
    long long rolled_back = 0;
    long long parked = 0; ///< DLQ entries, whatever their status now
  };
  std::map<std::string, per_consumer> consumers;
  long long crashes = 0;
  long long restarts = 0;
};

/// Reads the totals in one read-only transaction (throws db_error).
overview_rows read_overview_rows(const std::string& dsn);

/// The crash points after which the delivery was not recorded as applied:
/// the crash rolled it back (or left no mark), so it counts as a delivery
/// of its own.
bool rolls_back_delivery(const std::string& point);

} // namespace ef::persistence
