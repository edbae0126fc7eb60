#include "kafka/event_record.hpp"

#include <catch2/catch.hpp>

using ef::order_event;

namespace {

order_event sample() {
  return {"0190b6a8-1234-7abc-8def-0123456789ab",
          "OrderCreated",
          "0190b6a8-1234-7abc-8def-000000000001",
          "2026-12-02T10:00:00Z",
          R"({"total_cents":3000})",
          ""};
}

} // namespace

TEST_CASE("record_value_round_trips") {
  auto ev = sample();
  std::string err;
  auto back =
    ef::kafka::decode_value(ef::kafka::encode_value(ev), ev.order_id, err);
  REQUIRE(back);
  CHECK(back->event_id == ev.event_id);
  CHECK(back->event_type == ev.event_type);
  CHECK(back->order_id == ev.order_id);
  CHECK(back->occurred_at == ev.occurred_at);
  CHECK(back->payload == ev.payload);
}

TEST_CASE("poison_record_values_are_rejected_with_a_reason") {
  auto ev = sample();
  auto good = ef::kafka::encode_value(ev);
  struct bad {
    std::string value;
    std::string key;
    std::string says;
  };
  std::string wrong_type = good;
  wrong_type.replace(wrong_type.find("OrderCreated"), 12, "OrderShipped");
  for (auto& b : {bad{"", ev.order_id, "not a JSON object"},
                  bad{"{not json", ev.order_id, "not a JSON object"},
                  bad{"[1,2]", ev.order_id, "not a JSON object"},
                  bad{R"({"event_id":1})", ev.order_id, "event_id missing"},
                  bad{wrong_type, ev.order_id, "unknown event_type"},
                  bad{good, "another-key", "key does not match"}}) {
    std::string err;
    INFO(b.value);
    CHECK_FALSE(ef::kafka::decode_value(b.value, b.key, err));
    CHECK(err.find(b.says) != std::string::npos);
  }
}
