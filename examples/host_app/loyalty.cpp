#include "loyalty.hpp"

#include <map>

namespace host {

namespace {

// [doc:loyalty]
class loyalty_transaction : public ef::consumer_transaction {
public:
  explicit loyalty_transaction(pqxx::transaction_base& tx) : tx_(tx) {}

  // From the order's lines, as EventForge read them: no SQL on its tables.
  ef::effect apply(const ef::order_event&, ef::order_state& order) override {
    std::int64_t cents = 0, units = 0;
    for (auto& line : order.lines) {
      cents += line.qty * line.price_cents;
      units += line.qty;
    }
    auto points = cents / 100;
    earned_[order.customer_id] += points;
    return {"points_earned", points, units};
  }

  // One statement per customer, in customer order (sorted map), so that
  // two partitions crediting the same customers lock their rows in the same
  // order. EventForge commits it with the idempotency marks, or rolls it
  // back with them.
  void finish() override {
    for (auto& [customer, points] : earned_)
      tx_.exec_prepared("loyalty.credit", customer, points);
  }

private:
  pqxx::transaction_base& tx_;
  std::map<std::string, std::int64_t> earned_;
};

class loyalty : public ef::consumer {
public:
  std::string name() const override { return "loyalty"; }

  std::vector<std::string> event_types() const override {
    return {ef::order_created_type};
  }

  std::vector<std::string> migrations() const override {
    return {"CREATE TABLE loyalty_points ("
            " customer_id text PRIMARY KEY,"
            " points bigint NOT NULL,"
            " updated_at timestamptz NOT NULL DEFAULT now())"};
  }

  // Named "loyalty.credit" on the connection: EventForge puts the
  // consumer's name in front, so no name can collide with its own.
  void prepare(ef::statements& s) const override {
    s.prepare("credit",
              "INSERT INTO loyalty_points (customer_id, points) "
              "VALUES ($1, $2) ON CONFLICT (customer_id) DO UPDATE SET "
              "points = loyalty_points.points + EXCLUDED.points, "
              "updated_at = now()");
  }

  std::unique_ptr<ef::consumer_transaction>
  begin(pqxx::transaction_base& tx) const override {
    return std::make_unique<loyalty_transaction>(tx);
  }
};
// [/doc:loyalty]

} // namespace

ef::consumer_ptr make_loyalty_consumer() {
  return std::make_shared<loyalty>();
}

} // namespace host
