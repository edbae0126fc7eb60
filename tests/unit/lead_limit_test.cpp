// How far the relays may run ahead of the slowest consumer: what the
// operator set, else what the topic's log can hold.

#include "kafka/lead_limit.hpp"

#include <catch2/catch.hpp>

using ef::kafka::lead_limit;
using ef::kafka::retention;

namespace {

constexpr std::int64_t mib = 1024 * 1024;

struct fake_broker {
  std::optional<retention> answer;
  std::string refusal = "Broker: Unsupported version";
  int asked = 0;
  lead_limit::ask_fn ask() {
    return [this](std::string& why, const std::atomic<bool>&) {
      ++asked;
      if (!answer)
        why = refusal;
      return answer;
    };
  }
};

} // namespace

TEST_CASE("an_explicit_max_lead_bytes_wins_and_the_broker_is_not_asked") {
  fake_broker b;
  b.answer = retention{100 * mib, -1};
  lead_limit l(3 * mib, b.ask(), 5 * mib, 2 * mib);
  l.refresh();
  CHECK(l.bytes() == 3 * mib);
  lead_limit off(0, b.ask(), 5 * mib, 2 * mib);
  CHECK(off.bytes() == 0);
  CHECK(b.asked == 0);
  CHECK(l.reason() == "relay.max-lead-bytes=3145728 as configured");
}

TEST_CASE("the_limit_is_derived_from_the_retention_the_broker_describes") {
  fake_broker b;
  b.answer = retention{10 * mib, 604800000};
  lead_limit l(-1, b.ask(), -1, 2 * mib);
  CHECK(l.bytes() == 2 * mib); // the fallback, until the broker answers
  // A declared log size is the start instead: never a smaller limit than
  // the cluster's own before it answers.
  lead_limit declared(-1, b.ask(), 5 * mib, 2 * mib);
  CHECK(declared.bytes() == 4 * mib);
  declared.refresh();
  CHECK(declared.bytes() == 8 * mib);
  l.refresh();
  CHECK(l.bytes() == 8 * mib);
  CHECK(l.reason().find("retention.bytes=10485760") != std::string::npos);
  // Unlimited bytes (Kafka's default, time-based retention only): no limit,
  // a consumer stuck past retention.ms is repaired through its gap.
  fake_broker unlimited;
  unlimited.answer = retention{-1, 604800000};
  lead_limit days(-1, unlimited.ask(), -1, 2 * mib);
  days.refresh();
  CHECK(days.bytes() == 0);
}

TEST_CASE("a_broker_that_does_not_describe_its_topics_falls_back_to_the_"
          "declared_log_size_then_to_the_cautious_default") {
  fake_broker b; // no answer
  lead_limit declared(-1, b.ask(), 5 * mib, 2 * mib);
  declared.refresh();
  CHECK(declared.bytes() == 4 * mib);
  CHECK(declared.reason().find("in-process broker's 5120 KiB log") !=
        std::string::npos);
  CHECK(declared.reason().find("Unsupported version") != std::string::npos);
  lead_limit unknown(-1, b.ask(), -1, 2 * mib);
  unknown.refresh();
  CHECK(unknown.bytes() == 2 * mib);
  CHECK(unknown.reason().find("set relay.max-lead-bytes") != std::string::npos);
}

TEST_CASE("a_retention_that_changes_changes_the_limit_at_the_next_ask") {
  fake_broker b;
  b.answer = retention{10 * mib, -1};
  lead_limit l(-1, b.ask(), -1, 2 * mib);
  l.refresh();
  CHECK(l.bytes() == 8 * mib);
  b.answer = retention{20 * mib, -1};
  CHECK(l.bytes() == 8 * mib); // nothing asked in between
  l.refresh();
  CHECK(l.bytes() == 16 * mib);
  CHECK(b.asked == 2);
}
