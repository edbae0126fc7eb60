#include "persistence/order_store.hpp"

#include "messages/events.hpp"
#include "messages/ids.hpp"
#include "persistence/connection.hpp"
#include "persistence/order_rows.hpp"

#include <nlohmann/json.hpp>

namespace ef::persistence {

namespace {

void prepare(pqxx::connection& c) {
  c.prepare("claim_key",
            "INSERT INTO idempotency_keys (key, request_fingerprint, "
            "order_id, event_id) VALUES ($1, $2, $3, $4) "
            "ON CONFLICT (key) DO NOTHING RETURNING 1");
  c.prepare("find_key",
            "SELECT k.request_fingerprint, k.order_id, k.event_id, o.status "
            "FROM idempotency_keys k JOIN orders o ON o.id = k.order_id "
            "WHERE k.key = $1");
  c.prepare("insert_order",
            "INSERT INTO orders (id, customer_id, status, total_cents) "
            "VALUES ($1, $2, 'created', $3)");
  c.prepare("insert_item", "INSERT INTO order_items (order_id, line, sku, "
                           "qty, price_cents) VALUES ($1, $2, $3, $4, $5)");
  c.prepare("insert_outbox",
            "INSERT INTO outbox (event_id, order_id, shard, event_type, "
            "payload, headers) VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb)");
  c.prepare("request_cancel",
            "UPDATE orders SET cancel_requested_at = clock_timestamp(), "
            "updated_at = clock_timestamp() "
            "WHERE id = $1 AND cancel_requested_at IS NULL "
            "RETURNING customer_id, total_cents");
  c.prepare("order_exists", "SELECT 1 FROM orders WHERE id = $1");
}

/// Sums line totals, refusing overflow (validation bounds make it unlikely,
/// but an embedding caller may skip the HTTP validation).
std::int64_t order_total(const create_order& cmd) {
  std::int64_t total = 0;
  for (auto& item : cmd.items) {
    std::int64_t line = 0;
    if (__builtin_mul_overflow(item.qty, item.price_cents, &line) ||
        __builtin_add_overflow(total, line, &total))
      throw db_error(db_errc::permanent, "order total overflows 64 bits");
  }
  return total;
}

} // namespace

order_store::order_store(std::string dsn, int shards)
    : db_(std::make_unique<session>(std::move(dsn), prepare)), shards_(shards) {
  // nop
}

order_store::~order_store() = default;

create_result order_store::create(const create_order& cmd) {
  return create(cmd, new_uuid_v7(), new_uuid_v7());
}

create_result order_store::create(const create_order& cmd,
                                  const std::string& order_id,
                                  const std::string& event_id) {
  create_result r{create_result::created, order_id, event_id, "created"};
  auto total = order_total(cmd);
  try {
    pqxx::work w(db_->get());
    // The key row references the order, so the order goes first.
    w.exec_prepared("insert_order", r.order_id, cmd.customer_id, total);
    if (!cmd.idempotency_key.empty()) {
      // A concurrent request with the same key blocks here until the first
      // commits, then sees zero rows and reads the winner below.
      auto claimed =
        w.exec_prepared("claim_key", cmd.idempotency_key,
                        cmd.request_fingerprint, r.order_id, r.event_id);
      if (claimed.empty()) {
        w.abort();
        pqxx::read_transaction rt(db_->get());
        auto row = rt.exec_prepared1("find_key", cmd.idempotency_key);
        auto outcome = row[0].as<std::string>() == cmd.request_fingerprint
                         ? create_result::replayed
                         : create_result::key_conflict;
        return {outcome, row[1].as<std::string>(), row[2].as<std::string>(),
                row[3].as<std::string>()};
      }
    }
    std::vector<order_line> lines;
    int line = 0;
    for (auto& item : cmd.items) {
      w.exec_prepared("insert_item", r.order_id, ++line, item.sku, item.qty,
                      item.price_cents);
      lines.push_back({item.sku, item.qty, item.price_cents});
    }
    w.exec_prepared("insert_outbox", r.event_id, r.order_id,
                    shard_of(r.order_id, shards_), order_created_type,
                    created_payload(r.order_id, cmd.customer_id, total, lines),
                    headers_json(cmd.traceparent));
    w.commit();
  } catch (...) {
    rethrow_as_db_error();
  }
  return r;
}

cancel_result order_store::cancel(const std::string& order_id,
                                  const std::string& traceparent) {
  cancel_result r{cancel_result::cancelled, new_uuid_v7()};
  try {
    pqxx::work w(db_->get());
    auto row = w.exec_prepared("request_cancel", order_id);
    if (row.empty()) {
      auto exists = w.exec_prepared("order_exists", order_id);
      return {exists.empty() ? cancel_result::not_found
                             : cancel_result::already_cancelled,
              {}};
    }
    nlohmann::json payload{{"order_id", order_id},
                           {"customer_id", row[0][0].as<std::string>()},
                           {"total_cents", row[0][1].as<std::int64_t>()}};
    w.exec_prepared("insert_outbox", r.event_id, order_id,
                    shard_of(order_id, shards_), order_cancelled_type,
                    payload.dump(), headers_json(traceparent));
    w.commit();
  } catch (...) {
    rethrow_as_db_error();
  }
  return r;
}

std::optional<std::string> order_store::view_json(const std::string& order_id) {
  try {
    pqxx::read_transaction t(db_->get());
    // One query builds the whole document, so the view is one snapshot.
    auto r = t.exec_params(R"sql(
      SELECT json_build_object(
        'order_id', o.id, 'customer_id', o.customer_id, 'status', o.status,
        'total_cents', o.total_cents, 'created_at', o.created_at,
        'updated_at', o.updated_at,
        'cancel_requested_at', o.cancel_requested_at,
        'items', (SELECT coalesce(json_agg(json_build_object(
                    'sku', i.sku, 'qty', i.qty, 'price_cents', i.price_cents)
                    ORDER BY i.line), '[]') FROM order_items i
                  WHERE i.order_id = o.id),
        'events', (SELECT coalesce(json_agg(json_build_object(
                    'event_id', e.event_id, 'event_type', e.event_type,
                    'seq', e.seq, 'created_at', e.created_at,
                    'sent_at', e.sent_at,
                    'publish_attempts', e.publish_attempts)
                    ORDER BY e.seq), '[]') FROM outbox e
                   WHERE e.order_id = o.id),
        'effects', (SELECT coalesce(json_object_agg(c.consumer, c.effects),
                                    '{}')
                    FROM (SELECT b.consumer, json_agg(json_build_object(
                            'event_id', b.event_id, 'kind', b.kind,
                            'amount_cents', b.amount_cents,
                            'applied_at', b.applied_at) ORDER BY b.id) effects
                          FROM business_effects b WHERE b.order_id = o.id
                          GROUP BY b.consumer) c))
      FROM orders o WHERE o.id = $1)sql",
                           order_id);
    if (r.empty())
      return std::nullopt;
    return r[0][0].as<std::string>();
  } catch (...) {
    rethrow_as_db_error();
  }
}

} // namespace ef::persistence
