#include <eventforge/config/logging.hpp>

#include "messages/text.hpp"

#include <spdlog/pattern_formatter.h>

#include <atomic>
#include <mutex>
#include <vector>

namespace ef::log {

namespace {

std::mutex mtx;
std::shared_ptr<spdlog::logger> current; ///< guarded by mtx
/// Loggers use() replaced, kept alive (guarded by mtx): a line being
/// written through `fast` when it is replaced still finishes. Replacements
/// are rare (a host's start-up, tests), so this stays small.
std::vector<std::shared_ptr<spdlog::logger>> retired;
/// current.get(), for lines: no lock and no reference count per line.
std::atomic<spdlog::logger*> fast{nullptr};
std::atomic<bool> json_on{false};

/// Marks a message that already is a JSON member list (debug_members).
constexpr char fragment_mark = '\x1e';

/// Appends [begin, end) as the inside of a JSON string.
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

/// %* : the message as JSON members: debug_members' list as it is, any
/// other message as "msg":"<escaped text>".
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

std::shared_ptr<spdlog::logger> logger() {
  std::lock_guard<std::mutex> guard{mtx};
  if (!current) {
    if (auto registered = spdlog::get(logger_name)) {
      current = registered; // the host made it first
    } else {
      auto& sinks = spdlog::default_logger()->sinks();
      current = std::make_shared<spdlog::logger>(logger_name, sinks.begin(),
                                                 sinks.end());
      spdlog::initialize_logger(current); // registry's pattern and level
    }
    fast.store(current.get(), std::memory_order_release);
  }
  return current;
}

spdlog::logger& line_logger() {
  if (auto* l = fast.load(std::memory_order_acquire))
    return *l;
  return *logger();
}

void use(std::shared_ptr<spdlog::logger> replacement) {
  std::lock_guard<std::mutex> guard{mtx};
  spdlog::drop(logger_name);
  if (replacement && replacement->name() == logger_name)
    spdlog::register_logger(replacement);
  if (current)
    retired.push_back(current);
  current = std::move(replacement);
  fast.store(current.get(), std::memory_order_release); // null: made anew
}

void apply(const config::settings& cfg) {
  auto l = logger();
  l->set_level(spdlog::level::from_str(cfg.log.level));
  json_on = cfg.log.format == "json";
  if (json_on) {
    auto f = std::make_unique<spdlog::pattern_formatter>(
      spdlog::pattern_time_type::utc);
    f->add_flag<json_message>('*').set_pattern(
      R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l",%*})");
    l->set_formatter(std::move(f));
  }
}

bool json() {
  return json_on;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  escape_into(out, s.data(), s.data() + s.size());
  return out + "\"";
}

void debug_members(const std::string& members) {
  logger()->debug("{}", std::string(1, fragment_mark) + members);
}

} // namespace ef::log
