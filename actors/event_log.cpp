#include "actors/event_log.hpp"

#include "messages/text.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <atomic>

namespace ef::event_log {

namespace {

std::atomic<bool> json_format{false};

/// Marks a message that already is a JSON member list (a hop line).
constexpr char fragment_mark = '\x1e';

/// Appends [begin, end) as the inside of a JSON string. Bytes that are not
/// UTF-8 (a foreign record's key quoted in a message) become "\\xNN" first,
/// so a line is always valid JSON.
void escape_into(std::string& out, const char* begin, const char* end) {
  static const char* hex = "0123456789abcdef";
  std::string_view view(begin, static_cast<size_t>(end - begin));
  std::string repaired;
  if (!is_text(view)) {
    repaired = printable(view);
    begin = repaired.data();
    end = begin + repaired.size();
  }
  for (auto p = begin; p != end; ++p) {
    auto c = static_cast<unsigned char>(*p);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 0xf];
      } else {
        out += static_cast<char>(c);
      }
    }
  }
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  escape_into(out, s.data(), s.data() + s.size());
  return out + "\"";
}

/// %* : the message as JSON members: a hop's fragment as is, any other
/// message as "msg":"<escaped text>".
class json_message : public spdlog::custom_flag_formatter {
public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string out;
    auto* b = msg.payload.data();
    auto* e = b + msg.payload.size();
    if (b != e && *b == fragment_mark) {
      out.assign(b + 1, e);
    } else {
      out = "\"msg\":\"";
      escape_into(out, b, e);
      out += "\"";
    }
    dest.append(out.data(), out.data() + out.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<json_message>();
  }
};

} // namespace

std::string trace_id_of(const std::string& traceparent) {
  return traceparent.size() == 55 ? traceparent.substr(3, 32) : "";
}

void hop(const char* name, const std::string& order_id,
         const std::string& event_id, const std::string& traceparent,
         const fields& extra) {
  if (!spdlog::should_log(spdlog::level::debug))
    return;
  std::string line;
  auto trace = trace_id_of(traceparent);
  if (json_format) {
    line = std::string(1, fragment_mark) + "\"msg\":" + json_string(name) +
           ",\"order_id\":" + json_string(order_id) +
           ",\"event_id\":" + json_string(event_id) +
           ",\"trace_id\":" + json_string(trace);
    for (auto& [k, v] : extra)
      line += "," + json_string(k) + ":" + json_string(v);
  } else {
    line = std::string(name) + " order_id=" + order_id +
           " event_id=" + event_id + " trace_id=" + trace;
    for (auto& [k, v] : extra)
      line += " " + k + "=" + v;
  }
  spdlog::debug("{}", line);
}

void use_json_format() {
  json_format = true;
  auto f =
    std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  f->add_flag<json_message>('*').set_pattern(
    R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l",%*})");
  spdlog::set_formatter(std::move(f));
}

} // namespace ef::event_log
