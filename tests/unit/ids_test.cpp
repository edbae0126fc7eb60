#include "actors/order_validation.hpp"
#include "messages/ids.hpp"

#include <catch2/catch.hpp>

#include <set>

TEST_CASE("uuid_v7_is_well_formed_unique_and_time_ordered") {
  std::set<std::string> seen;
  std::string prev;
  for (int i = 0; i < 2000; ++i) {
    auto id = ef::new_uuid_v7();
    REQUIRE(ef::is_uuid(id));
    CHECK(id[14] == '7');                                         // version
    CHECK(std::string("89ab").find(id[19]) != std::string::npos); // variant
    CHECK(seen.insert(id).second);
    // Millisecond prefix never goes backwards.
    if (!prev.empty())
      CHECK(id.substr(0, 13) >= prev.substr(0, 13));
    prev = id;
  }
}

TEST_CASE("is_uuid_rejects_malformed_ids") {
  CHECK_FALSE(ef::is_uuid(""));
  CHECK_FALSE(ef::is_uuid("not-a-uuid"));
  CHECK_FALSE(ef::is_uuid("0190b6a8-1234-7abc-8def-0123456789a"));
  CHECK_FALSE(ef::is_uuid("0190b6a8x1234-7abc-8def-0123456789ab"));
  CHECK(ef::is_uuid("0190b6a8-1234-7abc-8def-0123456789ab"));
}

TEST_CASE("shard_of_is_stable_and_in_range") {
  // Fixed values (32-bit FNV-1a of the ID's text, computed apart):
  // changing the hash would strand unsent rows in old shards.
  CHECK(ef::shard_of("0190b6a8-1234-7abc-8def-0123456789ab", 4) == 0);
  CHECK(ef::shard_of("0190b6a8-1234-7abc-8def-0123456789ab", 64) == 16);
  CHECK(ef::shard_of("01a24ed6-b390-738d-915c-772fd7507063", 16) == 4);
  CHECK(ef::shard_of("01a24ed6-b390-738d-915c-772fd7507063", 64) == 36);
  CHECK(ef::shard_of("00000000-0000-7000-8000-000000000000", 4) == 2);
  CHECK(ef::shard_of("00000000-0000-7000-8000-000000000000", 16) == 14);
  std::set<int> used;
  for (int i = 0; i < 1000; ++i) {
    auto s = ef::shard_of(ef::new_uuid_v7(), 4);
    REQUIRE(s >= 0);
    REQUIRE(s < 4);
    used.insert(s);
  }
  CHECK(used.size() == 4);
}

TEST_CASE("fnv1a64_keeps_the_values_stored_fingerprints_were_made_with") {
  // The offset basis has always been 1469598103934665603, one digit short of
  // FNV's published 14695981039346656037 (this test found it). Idempotency
  // fingerprints stored in the database were made with it, so it stays;
  // these values pin it.
  CHECK(ef::fnv1a64("") == 0x14650fb0739d0383ULL);
  CHECK(ef::fnv1a64("a") == 0x44bd8ad473cd9906ULL);
  CHECK(ef::fnv1a64("foobar") == 0x88fad7c0a8ff07f2ULL);
}

TEST_CASE("a_create_requests_fingerprint_is_the_one_the_http_front_stored_for_"
          "the_same_body") {
  // The HTTP front stored FNV-1a 64 of the body's canonical JSON (keys
  // sorted, no spaces); keys within their retention must still match.
  ef::create_order cmd{"c1", {{"book", 2, 1500}}, "k", "", ""};
  char want[17];
  std::snprintf(
    want, sizeof(want), "%016llx",
    static_cast<unsigned long long>(ef::fnv1a64(
      R"({"customer_id":"c1","items":[{"price_cents":1500,"qty":2,"sku":"book"}]})")));
  CHECK(ef::request_fingerprint(cmd) == want);
  // Another body, another fingerprint; the key and trace do not count.
  auto other = cmd;
  other.items[0].qty = 3;
  CHECK(ef::request_fingerprint(other) != want);
  other = cmd;
  other.idempotency_key = "k2";
  other.traceparent = "00-x";
  CHECK(ef::request_fingerprint(other) == want);
}
