#include "persistence/dlq_store.hpp"

#include <catch2/catch.hpp>

using ef::persistence::dlq_store;

TEST_CASE("dlq_fingerprints_group_messages_that_differ_only_in_ids_numbers_"
          "and_quoted_text") {
  struct example {
    const char* message;
    const char* shape;
  };
  for (auto e : {
         example{"order 0190b6a8-1234-7abc-8def-0123456789AB not found",
                 "order <uuid> not found"},
         example{"value \"abc 12\" too long at offset 4711",
                 "value \"…\" too long at offset #"},
         example{"unterminated \"quote 12", "unterminated \"quote #"},
         example{"\"0190b6a8-1234-7abc-8def-0123456789ab\"", "\"…\""},
         // Not a UUID: a hex group too short, so only its digits go.
         example{"0190b6a-1234-7abc-8def-0123456789ab", "#b#a-#-#abc-#def-#ab"},
         example{"", ""},
         example{"no digits here", "no digits here"},
       }) {
    INFO(e.message);
    CHECK(dlq_store::fingerprint_of("db_permanent", e.message) ==
          std::string("db_permanent: ") + e.shape);
  }
  CHECK(dlq_store::fingerprint_of("x", "attempt 3 of 5") ==
        dlq_store::fingerprint_of("x", "attempt 4 of 5"));
}
