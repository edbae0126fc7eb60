#pragma once

#include "messages/tree_messages.hpp"
#include <eventforge/messages/events.hpp>

#include <string>

namespace ef {

/// Whether retrying a failed delivery can help.
enum class failure_class {
  /// Connection lost, serialization failure, deadlock, lock or statement
  /// timeout, broker unavailable, order not (yet) visible: retry inline.
  transient,
  /// Undecodable payload, unknown event type, a rule that can never pass, a
  /// later event of an order whose earlier event is parked: DLQ at once.
  permanent,
};

/// Why a delivery failed: class, a short kind (the DLQ's error class) and
/// the message.
struct failure {
  failure_class cls;
  std::string kind;
  std::string message;
  /// The database could not be reached (or the session broke): not the
  /// record's fault, and parking it would need that database. Retried with
  /// backoff for as long as the outage lasts, without spending the
  /// record's consumer.max-attempts.
  bool outage = false;
};

/// One record of a partition with the event decoded from it.
struct delivery {
  order_event ev;
  const partition_record* rec = nullptr;
};

} // namespace ef
