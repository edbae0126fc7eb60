#pragma once

#include <eventforge/config/settings.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ef::config {

/// The type a key is declared with on CAF's option set, so that CAF's INI
/// and command-line parsers read it as such. Lists (consumer.enabled,
/// chaos.points) are text, comma-separated: `--consumer.enabled=a,b` works
/// on a command line, where CAF's list syntax would need brackets and quotes.
enum class value_type { integer, real, boolean, text };

/// One configuration key: its name, default, meaning and how a textual value
/// is validated and stored. The single list of these is the config reference.
struct option {
  std::string key;         ///< "section.name", as in the INI file and CLI
  std::string description; ///< one line for --help and docs/config.md
  value_type type = value_type::text; ///< how CAF declares and parses it
  /// Parses and validates `value` into `s`; returns an error text on failure.
  std::function<std::optional<std::string>(settings& s,
                                           const std::string& value)>
    apply;
  /// Renders the current value of this key in `s` (used for defaults).
  std::function<std::string(const settings& s)> render;
};

/// All keys, in documentation order.
const std::vector<option>& options();

/// Key/value pairs in the order they were given (file first, then CLI).
using raw_values = std::vector<std::pair<std::string, std::string>>;

/// Builds settings from defaults overlaid with `values`. Stops at the first
/// unknown key or invalid value with a message that names the key.
struct build_result {
  settings value;
  std::string error; ///< empty on success
  bool ok() const { return error.empty(); }
};
build_result build_settings(const raw_values& values);

/// Checks one key and value as build_settings() would, without the checks
/// across keys: the same message naming the key, or nothing if it is fine.
std::optional<std::string> check_value(const std::string& key,
                                       const std::string& value);

/// The option table's entry for `key`, or null.
const option* find_option(const std::string& key);

/// The dead-letter topic: kafka.dlq-topic, or "<kafka.topic>.dlq".
inline std::string dlq_topic_of(const settings& s) {
  return s.kafka.dlq_topic.empty() ? s.kafka.topic + ".dlq" : s.kafka.dlq_topic;
}

/// Checks cross-key constraints that a single option cannot: backoff bounds,
/// retention of marks against rows, demo mode only on loopback,
/// kafka.min-insync-replicas within kafka.replication-factor.
std::optional<std::string> validate(const settings& s);

/// This process's node name when node.name is empty: the host name and
/// http.port (the process ID when the port is picked at start).
std::string default_node_name(const settings& s);

/// Reads what the settings name outside themselves: http.admin-token-file
/// into http.admin_token; kafka.properties-file, then the environment's
/// EVENTFORGE_KAFKA_PROPERTY_* (..._SASL_PASSWORD -> sasl.password), into
/// kafka.properties. The file names are cleared once read, so reading again
/// changes nothing. build_settings() does it for a file and a command line;
/// ef::start, ef::runtime and the HTTP front do it for settings a host
/// built in code, so a properties file a host names is never ignored. The
/// first problem, naming the key and the file (never a secret), or nothing.
std::optional<std::string> read_referenced_files(settings& s);

/// `s` with read_referenced_files() applied; throws std::invalid_argument
/// with its message.
settings with_referenced_files(const settings& s);

/// Checks settings a host built in code as build_settings() checks a file
/// and a command line: every key's value, then validate(). The first
/// problem, in the same words (naming the key), or nothing. ef::start,
/// ef::instance and the HTTP front refuse settings that fail it.
std::optional<std::string> check_settings(const settings& s);

/// True if `host` is a loopback address or name: "localhost", any address
/// in 127.0.0.0/8, "::1" (with or without brackets) or an IPv4-mapped
/// 127.x address. A name other than "localhost" is not resolved.
bool is_loopback(const std::string& host);

} // namespace ef::config
