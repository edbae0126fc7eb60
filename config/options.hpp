#pragma once

#include "config/settings.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ef::config {

/// One configuration key: its name, default, meaning and how a textual value
/// is validated and stored. The single list of these is the config reference.
struct option {
  std::string key;         ///< "section.name", as in the INI file and CLI
  std::string description; ///< one line for --help and docs/config.md
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

/// The dead-letter topic: kafka.dlq-topic, or "<kafka.topic>.dlq".
inline std::string dlq_topic_of(const settings& s) {
  return s.kafka.dlq_topic.empty() ? s.kafka.topic + ".dlq" : s.kafka.dlq_topic;
}

/// Checks cross-key constraints that a single option cannot (none yet beyond
/// the per-key ones, kept as the place to add them).
std::optional<std::string> validate(const settings& s);

} // namespace ef::config
