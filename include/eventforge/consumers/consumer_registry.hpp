#pragma once

#include <eventforge/consumers/consumer.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace ef {

/// The consumers a tree can run, by name. `consumer.enabled` selects among
/// them; ef::start refuses a name that is not registered.
class consumer_registry {
public:
  /// An empty registry: a host that wants none of the built-in consumers.
  consumer_registry() = default;

  /// fulfillment and billing, the consumers EventForge ships.
  static consumer_registry with_builtins();

  /// Registers `c`; throws std::invalid_argument if its name is malformed
  /// or taken, or it handles no event type.
  consumer_registry& add(consumer_ptr c);

  /// The consumer called `name`, or nullptr.
  consumer_ptr find(const std::string& name) const;

  /// Every registered name, sorted.
  std::vector<std::string> names() const;

  /// A message naming the first consumer the host registered (not a
  /// built-in one, which a host may leave off) that `enabled` does not
  /// name: it would never run. "" if there is none. ef::start refuses such
  /// a tree.
  std::string not_enabled(const std::vector<std::string>& enabled) const;

private:
  std::map<std::string, consumer_ptr> by_name_;
  /// The names with_builtins() registered.
  std::set<std::string> builtins_;
};

/// Whether `name` may name a consumer: non-empty, lowercase letters,
/// digits, '_' and '-' (it becomes part of a Kafka group name).
bool valid_consumer_name(const std::string& name);

} // namespace ef
