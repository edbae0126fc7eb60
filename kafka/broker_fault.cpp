#include "kafka/broker_fault.hpp"

#include <librdkafka/rdkafka.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <sstream>

namespace ef::kafka {

namespace {

/// The Kafka protocol's request types a fault may refuse, by name.
struct api_key {
  const char* name;
  int key;
};
constexpr api_key api_keys[] = {
  {"produce", 0},           {"fetch", 1},         {"list-offsets", 2},
  {"metadata", 3},          {"offset-commit", 8}, {"offset-fetch", 9},
  {"find-coordinator", 10}, {"join-group", 11},   {"heartbeat", 12},
  {"leave-group", 13},      {"sync-group", 14},   {"init-producer-id", 22},
};

bool to_int(const std::string& text, int lo, int hi, int& out) {
  if (text.empty())
    return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi)
    return false;
  out = static_cast<int>(v);
  return true;
}

/// A Kafka error by name (NOT_LEADER_FOR_PARTITION) or number (6); only
/// the broker's own errors, not librdkafka's internal ones (negative).
bool to_error(const std::string& text, int& code) {
  const rd_kafka_err_desc* descs = nullptr;
  size_t n = 0;
  rd_kafka_get_err_descs(&descs, &n);
  int number = 0;
  bool numeric = to_int(text, 1, 32767, number);
  for (size_t i = 0; i < n; ++i) {
    if (descs[i].name == nullptr || descs[i].code <= 0)
      continue;
    if ((numeric && descs[i].code == number) || text == descs[i].name) {
      code = descs[i].code;
      return true;
    }
  }
  return false;
}

} // namespace

const std::vector<std::string>& fault_apis() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (auto& a : api_keys)
      out.emplace_back(a.name);
    return out;
  }();
  return names;
}

int api_key_of(const std::string& api) {
  for (auto& a : api_keys)
    if (api == a.name)
      return a.key;
  return -1;
}

int error_code_of(const std::string& error) {
  int code = 0;
  return to_error(error, code) ? code : -1;
}

std::string to_string(const broker_fault& f) {
  using k = broker_fault::kind;
  auto n = std::to_string(f.broker);
  switch (f.what) {
  case k::down:
    return "down " + n;
  case k::up:
    return "up " + n;
  case k::leader:
    return "leader " + f.topic + " " + std::to_string(f.partition) + " " +
           (f.broker == 0 ? std::string("next") : n);
  case k::rtt:
    return "rtt " + n + " " + std::to_string(f.rtt_ms);
  case k::errors:
    return "errors " + f.api + " " + std::to_string(f.count) + " " + f.error;
  case k::coordinator:
    return "coordinator " + f.group + " " + n;
  case k::clear:
    return "clear";
  case k::status:
    return "status";
  }
  return "?";
}

namespace {

/// The arguments of `errors API COUNT ERROR` into `f` (the error by its
/// librdkafka name); why not, if one is wrong.
std::optional<std::string>
parse_error_injection(const std::vector<std::string>& w, broker_fault& f) {
  f.api = w[1];
  f.error = w[3];
  int code = 0;
  if (api_key_of(f.api) < 0) {
    std::string names;
    for (auto& a : fault_apis())
      names += (names.empty() ? "" : ", ") + a;
    return "unknown request type \"" + f.api + "\"; one of " + names;
  }
  if (!to_int(w[2], 1, 1000, f.count))
    return "count must be 1 to 1000, got \"" + w[2] + "\"";
  if (!to_error(f.error, code))
    return "unknown Kafka error \"" + f.error +
           "\"; a name such as NOT_LEADER_FOR_PARTITION or its number";
  f.error = rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(code));
  return std::nullopt;
}

} // namespace

std::variant<broker_fault, std::string> parse_fault(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string word; in >> word;)
    w.push_back(word);
  static const std::string usage =
    "commands: down N | up N | leader TOPIC PARTITION N|next | rtt N MS | "
    "errors "
    "API COUNT ERROR | coordinator GROUP N | clear | status";
  if (w.empty())
    return "empty command; " + usage;
  broker_fault f;
  auto args = [&](size_t n) -> std::optional<std::string> {
    if (w.size() == n + 1)
      return std::nullopt;
    return w[0] + " takes " + std::to_string(n) + " argument" +
           (n == 1 ? "" : "s") + ", got " + std::to_string(w.size() - 1) +
           "; " + usage;
  };
  auto broker_at = [&](size_t i) -> std::optional<std::string> {
    if (to_int(w[i], 1, 1000, f.broker))
      return std::nullopt;
    return "broker must be a broker id (1, 2, ...), got \"" + w[i] + "\"";
  };
  const auto& cmd = w[0];
  std::optional<std::string> err;
  if (cmd == "down" || cmd == "up") {
    f.what = cmd == "down" ? broker_fault::kind::down : broker_fault::kind::up;
    if (!(err = args(1)))
      err = broker_at(1);
  } else if (cmd == "leader") {
    f.what = broker_fault::kind::leader;
    if (!(err = args(3))) {
      f.topic = w[1];
      if (!to_int(w[2], 0, 1000000, f.partition))
        err = "partition must be a number >= 0, got \"" + w[2] + "\"";
      else if (w[3] == "next")
        f.broker = 0;
      else
        err = broker_at(3);
    }
  } else if (cmd == "rtt") {
    f.what = broker_fault::kind::rtt;
    if (!(err = args(2)) && !(err = broker_at(1)) &&
        !to_int(w[2], 0, 600000, f.rtt_ms))
      err = "rtt must be milliseconds from 0 to 600000, got \"" + w[2] + "\"";
  } else if (cmd == "errors") {
    f.what = broker_fault::kind::errors;
    if (!(err = args(3)))
      err = parse_error_injection(w, f);
  } else if (cmd == "coordinator") {
    f.what = broker_fault::kind::coordinator;
    if (!(err = args(2))) {
      f.group = w[1];
      err = broker_at(2);
    }
  } else if (cmd == "clear" || cmd == "status") {
    f.what =
      cmd == "clear" ? broker_fault::kind::clear : broker_fault::kind::status;
    err = args(0);
  } else {
    err = "unknown command \"" + cmd + "\"; " + usage;
  }
  if (err)
    return *err;
  return f;
}

} // namespace ef::kafka
