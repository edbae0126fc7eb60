#include "consumers/fulfillment.hpp"

namespace ef {

namespace {

class fulfillment_transaction : public consumer_transaction {
public:
  effect apply(const order_event& ev, order_state& o) override {
    if (ev.event_type == order_created_type) {
      if (o.status != "created")
        return {"fulfill_skipped", 0};
      o.status = "processed";
      std::int64_t units = 0;
      for (auto& line : o.lines)
        units += line.qty;
      return {"fulfilled", 0, units};
    }
    o.status = "cancelled";
    return {"cancelled", 0};
  }
};

class fulfillment : public consumer {
public:
  std::string name() const override { return "fulfillment"; }

  std::vector<std::string> event_types() const override {
    return {order_created_type, order_cancelled_type};
  }

  std::unique_ptr<consumer_transaction>
  begin(pqxx::transaction_base&) const override {
    return std::make_unique<fulfillment_transaction>();
  }
};

} // namespace

consumer_ptr make_fulfillment_consumer() {
  return std::make_shared<fulfillment>();
}

} // namespace ef
