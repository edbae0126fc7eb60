// libFuzzer target: the POST /orders parser and validator (app/http/
// order_request.cpp, actors/order_validation.cpp) must be total. Any bytes
// give a command or a refusal, never a crash, an exception or a hang; a
// command it accepts must pass the value rules on its own and hold only text
// PostgreSQL can store.
//
// Input: the body. Its first byte also picks the Content-Type and whether
// the first bytes double as an Idempotency-Key, so headers get fuzzed too.

#include "actors/order_validation.hpp"
#include "app/http/order_request.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  static const char* types[] = {"application/json",
                                "application/json; charset=utf-8",
                                "APPLICATION/JSON;CHARSET=\"UTF-8\"",
                                "application/json; charset=latin1",
                                "text/plain",
                                ""};
  auto pick = size > 0 ? static_cast<unsigned char>(data[0]) : 0;
  ef::app::http::order_request req;
  req.content_type = types[pick % 6];
  req.body = bytes;
  if ((pick & 0x40) != 0)
    req.idempotency_key = bytes.substr(0, (pick & 0x3F) % (size + 1));
  auto result = ef::app::http::parse_order(req);
  if (auto* cmd = std::get_if<ef::create_order>(&result)) {
    if (ef::validate(*cmd) || !ef::is_clean_text(cmd->customer_id))
      std::abort(); // accepted something the rules refuse
    for (auto& item : cmd->items)
      if (!ef::is_clean_text(item.sku))
        std::abort();
  } else {
    auto& why = std::get<ef::app::http::refusal>(result);
    if (why.status < 400 || why.status > 499 || why.message.empty())
      std::abort(); // every refusal is a 4xx with a message
  }
  return 0;
}
