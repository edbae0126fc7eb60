#pragma once

// The API conversation: order commands sent to the EventForge root actor (by
// the HTTP front end or by any actor of an embedding application) and their
// replies. Failures come back as caf::error in the "ef_api" category.

#include <caf/all.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ef {

// -- commands -----------------------------------------------------------------

struct order_item {
  std::string sku;
  std::int64_t qty = 0;
  std::int64_t price_cents = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, order_item& x) {
  return f(caf::meta::type_name("order_item"), x.sku, x.qty, x.price_cents);
}

/// Places an order. `idempotency_key` may be empty; `request_fingerprint`
/// identifies the request body so a reused key with another body is a 409.
///
/// `deadline_unix_ms` (0: none) is when the sender stops waiting for the
/// answer, in milliseconds since the Unix epoch. An API worker that cannot
/// commit the command by then writes nothing and answers
/// api_errc::unavailable ("nothing was written"), so that answer is a fact;
/// only a sender that gives up waiting without an answer must treat the
/// outcome as unknown (docs/api-contract.md).
struct create_order {
  std::string customer_id;
  std::vector<order_item> items;
  std::string idempotency_key;
  std::string request_fingerprint;
  std::string traceparent;
  std::int64_t deadline_unix_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, create_order& x) {
  return f(caf::meta::type_name("create_order"), x.customer_id, x.items,
           x.idempotency_key, x.request_fingerprint, x.traceparent,
           x.deadline_unix_ms);
}

/// Requests the cancellation of an order; `deadline_unix_ms` as for
/// create_order.
struct cancel_order {
  std::string order_id;
  std::string traceparent;
  std::int64_t deadline_unix_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cancel_order& x) {
  return f(caf::meta::type_name("cancel_order"), x.order_id, x.traceparent,
           x.deadline_unix_ms);
}

struct get_order {
  std::string order_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_order& x) {
  return f(caf::meta::type_name("get_order"), x.order_id);
}

// -- replies ------------------------------------------------------------------

/// Reply to create_order. `replayed` is true when an earlier request with the
/// same idempotency key created the order and nothing new was written.
struct order_accepted {
  std::string order_id;
  std::string event_id;
  std::string status;
  bool replayed = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, order_accepted& x) {
  return f(caf::meta::type_name("order_accepted"), x.order_id, x.event_id,
           x.status, x.replayed);
}

struct cancel_accepted {
  std::string order_id;
  std::string event_id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cancel_accepted& x) {
  return f(caf::meta::type_name("cancel_accepted"), x.order_id, x.event_id);
}

/// One outbox event of an order, as get_order reports it.
struct order_view_event {
  std::string event_id;
  std::string event_type;
  std::int64_t seq = 0;
  std::string created_at; ///< RFC 3339
  std::string sent_at;    ///< RFC 3339; "" while unsent
  std::int64_t publish_attempts = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, order_view_event& x) {
  return f(caf::meta::type_name("order_view_event"), x.event_id, x.event_type,
           x.seq, x.created_at, x.sent_at, x.publish_attempts);
}

/// One business effect a consumer applied for an order's event.
struct order_view_effect {
  std::string event_id;
  std::string kind; ///< e.g. "fulfilled", "debit", "refund_skipped"
  std::int64_t amount_cents = 0;
  std::int64_t quantity = 0;
  std::string applied_at; ///< RFC 3339
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, order_view_effect& x) {
  return f(caf::meta::type_name("order_view_effect"), x.event_id, x.kind,
           x.amount_cents, x.quantity, x.applied_at);
}

/// Reply to get_order: the order, its lines, its events and each
/// consumer's effects, read in one snapshot. GET /orders/{id} returns it
/// as JSON with the same names.
struct order_view {
  std::string order_id;
  std::string customer_id;
  std::string status; ///< "accepted", "fulfilled", "cancelled", ...
  std::int64_t total_cents = 0;
  std::string created_at;          ///< RFC 3339
  std::string updated_at;          ///< RFC 3339
  std::string cancel_requested_at; ///< RFC 3339; "" if never
  std::vector<order_item> items;
  std::vector<order_view_event> events; ///< in outbox order
  /// Per consumer, in the order they were applied.
  std::map<std::string, std::vector<order_view_effect>> effects;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, order_view& x) {
  return f(caf::meta::type_name("order_view"), x.order_id, x.customer_id,
           x.status, x.total_cents, x.created_at, x.updated_at,
           x.cancel_requested_at, x.items, x.events, x.effects);
}

} // namespace ef
