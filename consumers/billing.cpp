#include "consumers/billing.hpp"

#include "messages/text.hpp"

#include <map>

namespace ef {

// In customer order, at the end of the transaction: concurrent batches lock
// the accounts they share in the same order (no deadlock), and briefly.
const char* const sql::adjust_balances =
  "INSERT INTO accounts (customer_id, balance_cents) "
  "SELECT c, d FROM unnest($1::text[], $2::bigint[]) AS x(c, d) "
  "ORDER BY c ON CONFLICT (customer_id) DO UPDATE SET "
  "balance_cents = accounts.balance_cents + EXCLUDED.balance_cents, "
  "updated_at = clock_timestamp()";

namespace {

class billing_transaction : public consumer_transaction {
public:
  explicit billing_transaction(pqxx::transaction_base& tx) : tx_(tx) {
    // nop
  }

  effect apply(const order_event& ev, order_state& o) override {
    auto has = [&](const char* kind) { return o.effect_kinds.count(kind) > 0; };
    if (ev.event_type == order_created_type) {
      if (has("refund") || has("refund_skipped"))
        return {"debit_skipped", 0};
      deltas_[o.customer_id] -= o.total_cents;
      return {"debit", o.total_cents};
    }
    if (!has("debit"))
      return {"refund_skipped", 0};
    deltas_[o.customer_id] += o.total_cents;
    return {"refund", o.total_cents};
  }

  void finish() override {
    if (deltas_.empty())
      return;
    std::vector<std::string> customers;
    std::vector<std::int64_t> amounts;
    for (auto& [customer, delta] : deltas_) {
      customers.push_back(customer);
      amounts.push_back(delta);
    }
    tx_.exec_prepared("billing.adjust_balances", array_literal(customers),
                      array_literal(amounts));
  }

private:
  pqxx::transaction_base& tx_;
  /// Balance changes of the transaction, by customer (sorted).
  std::map<std::string, std::int64_t> deltas_;
};

class billing : public consumer {
public:
  std::string name() const override { return "billing"; }

  std::vector<std::string> event_types() const override {
    return {order_created_type, order_cancelled_type};
  }

  // The accounts table came with the core schema (migration 1), before
  // consumers brought their own; a new consumer would create it here.

  void prepare(statements& s) const override {
    s.prepare("adjust_balances", sql::adjust_balances); // billing.adjust_...
  }

  std::unique_ptr<consumer_transaction>
  begin(pqxx::transaction_base& tx) const override {
    return std::make_unique<billing_transaction>(tx);
  }
};

} // namespace

consumer_ptr make_billing_consumer() {
  return std::make_shared<billing>();
}

} // namespace ef
