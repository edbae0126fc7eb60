#include "persistence/order_store.hpp"

#include "messages/ids.hpp"
#include "messages/text.hpp"
#include "persistence/connection.hpp"
#include "persistence/order_rows.hpp"
#include <eventforge/messages/events.hpp>

#include <nlohmann/json.hpp>

namespace ef::persistence {

// One statement per order: the key claim decides whether the order, its
// items and its outbox row are inserted at all. Foreign keys are checked
// at the end of the statement, so the key may name the order it precedes.
const char* const sql::create_order = R"sql(
    WITH key_claim AS (
      INSERT INTO idempotency_keys (key, request_fingerprint, order_id,
                                    event_id)
      SELECT $1, $2, $3, $4 WHERE $1 <> ''
      ON CONFLICT (key) DO NOTHING RETURNING 1),
    go AS (SELECT $1 = '' OR EXISTS (SELECT 1 FROM key_claim) AS ok),
    new_order AS (
      INSERT INTO orders (id, customer_id, status, total_cents)
      SELECT $3, $5, 'created', $6 FROM go WHERE ok),
    new_items AS (
      INSERT INTO order_items (order_id, line, sku, qty, price_cents)
      SELECT $3, t.line, t.sku, t.qty, t.price_cents
      FROM go, ROWS FROM (jsonb_to_recordset($7::jsonb)
                          AS (sku text, qty bigint, price_cents bigint))
               WITH ORDINALITY AS t(sku, qty, price_cents, line)
      WHERE ok),
    new_event AS (
      INSERT INTO outbox (event_id, order_id, shard, event_type, payload,
                          headers)
      SELECT $4, $3, $8, $9, $10::jsonb, $11::jsonb FROM go WHERE ok)
    SELECT ok FROM go)sql";

namespace {

void prepare(pqxx::connection& c) {
  c.prepare("create_order", sql::create_order);
  // A concurrent command with the same key blocked in the claim above until
  // the first committed; this reads the winner (a new snapshot per
  // statement under READ COMMITTED, so it sees that commit or our own row).
  c.prepare("find_key",
            "SELECT k.request_fingerprint, k.order_id, k.event_id, o.status "
            "FROM idempotency_keys k JOIN orders o ON o.id = k.order_id "
            "WHERE k.key = $1");
  c.prepare("cancel_order", R"sql(
    WITH cancelled AS (
      UPDATE orders SET cancel_requested_at = clock_timestamp(),
                        updated_at = clock_timestamp()
      WHERE id = $1 AND cancel_requested_at IS NULL
      RETURNING id, customer_id, total_cents)
    INSERT INTO outbox (event_id, order_id, shard, event_type, payload,
                        headers)
    SELECT $2, c.id, $3, $4,
           jsonb_build_object('schema_version', )sql" +
                              std::to_string(payload_schema_version) + R"sql(,
                              'order_id', c.id, 'customer_id', c.customer_id,
                              'total_cents', c.total_cents), $5::jsonb
    FROM cancelled c RETURNING 1)sql");
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

namespace {

/// The transaction one write() opens, shared by its commands.
struct writer_tx {
  pqxx::connection& c;
  /// What the transaction opens with besides BEGIN (the deadline's SET
  /// LOCAL); empty: nothing.
  std::string opening;
  int shards;
  std::set<std::string>& prepared; ///< order_store::prepared_
  /// Opened by the first command, which travels with BEGIN and the opening
  /// in one round trip once the server has it prepared: a lone order costs
  /// two round trips (this and COMMIT), not three.
  std::optional<opening_transaction> w;

  /// Runs the prepared statement `name` in the transaction.
  pqxx::result exec(const std::string& name,
                    const std::vector<std::string>& args) {
    bool ready = prepared.count(name) > 0;
    if (!w && ready) {
      auto sql = execute_sql(c, name, args);
      w.emplace(c, opening.empty() ? sql : opening + "; " + sql);
      return w->opened();
    }
    if (!w)
      w.emplace(c, opening);
    auto r = w->exec_prepared(name, pqxx::prepare::make_dynamic_params(args));
    prepared.insert(name);
    return r;
  }
};

/// The production order_writer: each command one prepared statement in
/// the transaction of `impl_`.
class pg_order_writer final : public order_writer {
public:
  explicit pg_order_writer(writer_tx& tx) : impl_(tx) {}
  create_result create(const create_order& cmd, const std::string& order_id,
                       const std::string& event_id) override;
  cancel_result cancel(const std::string& order_id,
                       const std::string& traceparent) override;

private:
  writer_tx& impl_;
};

create_result pg_order_writer::create(const create_order& cmd,
                                      const std::string& order_id,
                                      const std::string& event_id) {
  auto total = order_total(cmd);
  std::vector<order_line> lines;
  nlohmann::json items = nlohmann::json::array();
  for (auto& item : cmd.items) {
    lines.push_back({item.sku, item.qty, item.price_cents});
    items.push_back({{"sku", item.sku},
                     {"qty", item.qty},
                     {"price_cents", item.price_cents}});
  }
  auto payload = created_payload(order_id, cmd.customer_id, total, lines);
  auto headers = headers_json(cmd.traceparent);
  // The key was taken when the claim looked; the janitor may delete it (past
  // api.idempotency-retention) before the read below. Then it is absent: a
  // new request, so the claim runs once more. Twice gone is a race worth a
  // retry of the whole transaction.
  for (int claims = 0; claims < 2; ++claims) {
    auto go = impl_.exec("create_order",
                         {cmd.idempotency_key, cmd.request_fingerprint,
                          order_id, event_id, cmd.customer_id,
                          std::to_string(total), items.dump(),
                          std::to_string(shard_of(order_id, impl_.shards)),
                          order_created_type, payload, headers});
    if (go.size() != 1)
      throw std::logic_error("create_order returned " +
                             std::to_string(go.size()) + " rows");
    if (go[0][0].as<bool>())
      return {create_result::created, order_id, event_id, "created"};
    auto found = impl_.exec("find_key", {cmd.idempotency_key});
    if (found.empty())
      continue;
    auto& row = found[0];
    auto outcome = row[0].as<std::string>() == cmd.request_fingerprint
                     ? create_result::replayed
                     : create_result::key_conflict;
    return {outcome, row[1].as<std::string>(), row[2].as<std::string>(),
            row[3].as<std::string>()};
  }
  throw db_error(db_errc::transient,
                 "Idempotency-Key " + printable(cmd.idempotency_key) +
                   " was taken and gone twice while this order was written "
                   "(retention deleting it meanwhile)");
}

cancel_result pg_order_writer::cancel(const std::string& order_id,
                                      const std::string& traceparent) {
  cancel_result r{cancel_result::cancelled, new_uuid_v7()};
  auto row = impl_.exec("cancel_order",
                        {order_id, r.event_id,
                         std::to_string(shard_of(order_id, impl_.shards)),
                         order_cancelled_type, headers_json(traceparent)});
  if (!row.empty())
    return r;
  auto exists = impl_.exec("order_exists", {order_id});
  return {exists.empty() ? cancel_result::not_found
                         : cancel_result::already_cancelled,
          {}};
}

} // namespace

order_store::order_store(std::string dsn, int shards)
    : db_(std::make_unique<session>(std::move(dsn), prepare)), shards_(shards) {
  // nop
}

order_store::~order_store() = default;

void order_store::write(
  const std::function<void(order_writer&)>& body,
  std::optional<std::chrono::system_clock::time_point> deadline) {
  // A session that broke while idle (the server restarted) fails the next
  // transaction before anything of it is written: drop it and run the body
  // once more on a new one. Never after COMMIT began (in_doubt).
  for (int attempt = 0;; ++attempt) {
    try {
      write_once(body, deadline);
      return;
    } catch (const db_error& e) {
      if (e.code() != db_errc::unavailable || attempt > 0)
        throw;
      db_->reset();
    }
  }
}

void order_store::write_once(
  const std::function<void(order_writer&)>& body,
  std::optional<std::chrono::system_clock::time_point> deadline) {
  using namespace std::chrono;
  // Both round towards the deadline's side, so the API worker, comparing
  // the clock with the deadline after a failure, always agrees that the
  // deadline is why: a timeout truncated to whole milliseconds could fire
  // (or a check could claim it passed) up to 1 ms before it did.
  auto passed = [&] { return system_clock::now() >= *deadline; };
  auto left = [&] {
    return ceil<milliseconds>(*deadline - system_clock::now());
  };
  try {
    if (deadline && passed())
      throw db_error(db_errc::transient, "the deadline passed before the "
                                         "transaction began; nothing was "
                                         "written");
    // A lock or a stalled server cannot hold a statement past the
    // deadline: it is cancelled (SQLSTATE 57014, transient). Set with the
    // BEGIN and the first command, in their round trip.
    auto& c = db_->get();
    if (db_->generation() != prepared_generation_) {
      prepared_.clear(); // a new connection: nothing is prepared on it
      prepared_generation_ = db_->generation();
    }
    writer_tx i{c,
                deadline
                  ? "SET LOCAL statement_timeout = " +
                      std::to_string(std::max<long long>(1, left().count()))
                  : std::string{},
                shards_,
                prepared_,
                {}};
    pg_order_writer writer(i);
    body(writer);
    if (!i.w)
      return; // no command: nothing to write
    if (deadline && passed())
      throw db_error(db_errc::transient,
                     "the deadline passed before COMMIT; rolled back, "
                     "nothing was written");
    i.w->commit();
  } catch (const db_error&) {
    throw;
  } catch (...) {
    rethrow_as_db_error();
  }
}

create_result order_store::create(const create_order& cmd) {
  return create(cmd, new_uuid_v7(), new_uuid_v7());
}

create_result order_store::create(const create_order& cmd,
                                  const std::string& order_id,
                                  const std::string& event_id) {
  create_result r;
  write([&](order_writer& w) { r = w.create(cmd, order_id, event_id); });
  return r;
}

cancel_result order_store::cancel(const std::string& order_id,
                                  const std::string& traceparent) {
  cancel_result r;
  write([&](order_writer& w) { r = w.cancel(order_id, traceparent); });
  return r;
}

namespace {

std::string text_or_empty(const nlohmann::json& j, const char* key) {
  auto& v = j.at(key);
  return v.is_null() ? std::string{} : v.get<std::string>();
}

/// The document the view's query builds, as the typed view.
order_view view_of(const nlohmann::json& j) {
  order_view v;
  v.order_id = j.at("order_id").get<std::string>();
  v.customer_id = j.at("customer_id").get<std::string>();
  v.status = j.at("status").get<std::string>();
  v.total_cents = j.at("total_cents").get<std::int64_t>();
  v.created_at = text_or_empty(j, "created_at");
  v.updated_at = text_or_empty(j, "updated_at");
  v.cancel_requested_at = text_or_empty(j, "cancel_requested_at");
  for (auto& i : j.at("items"))
    v.items.push_back({i.at("sku").get<std::string>(),
                       i.at("qty").get<std::int64_t>(),
                       i.at("price_cents").get<std::int64_t>()});
  for (auto& e : j.at("events"))
    v.events.push_back(
      {e.at("event_id").get<std::string>(),
       e.at("event_type").get<std::string>(), e.at("seq").get<std::int64_t>(),
       text_or_empty(e, "created_at"), text_or_empty(e, "sent_at"),
       e.at("publish_attempts").get<std::int64_t>()});
  for (auto& [consumer, effects] : j.at("effects").items())
    for (auto& x : effects)
      v.effects[consumer].push_back(
        {x.at("event_id").get<std::string>(), x.at("kind").get<std::string>(),
         x.at("amount_cents").get<std::int64_t>(),
         x.at("quantity").get<std::int64_t>(), text_or_empty(x, "applied_at")});
  return v;
}

} // namespace

std::optional<order_view> order_store::view(const std::string& order_id) {
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
                            'quantity', b.quantity,
                            'applied_at', b.applied_at) ORDER BY b.id) effects
                          FROM business_effects b WHERE b.order_id = o.id
                          GROUP BY b.consumer) c))
      FROM orders o WHERE o.id = $1)sql",
                           order_id);
    if (r.empty())
      return std::nullopt;
    return view_of(nlohmann::json::parse(r[0][0].as<std::string>()));
  } catch (...) {
    rethrow_as_db_error();
  }
}

} // namespace ef::persistence
