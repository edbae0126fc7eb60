#include <eventforge/consumers/consumer_registry.hpp>

#include "consumers/billing.hpp"
#include "consumers/fulfillment.hpp"

#include <algorithm>
#include <stdexcept>

namespace ef {

bool valid_consumer_name(const std::string& name) {
  if (name.empty())
    return false;
  for (char ch : name)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
          ch == '-'))
      return false;
  return true;
}

consumer_registry consumer_registry::with_builtins() {
  consumer_registry r;
  r.add(make_fulfillment_consumer());
  r.add(make_billing_consumer());
  r.builtins_ = {"fulfillment", "billing"};
  return r;
}

consumer_registry& consumer_registry::add(consumer_ptr c) {
  if (!c)
    throw std::invalid_argument("consumer_registry::add: null consumer");
  auto name = c->name();
  if (!valid_consumer_name(name))
    throw std::invalid_argument(
      "consumer name \"" + name +
      "\" is malformed (lowercase letters, digits, '_' and '-')");
  if (c->event_types().empty())
    throw std::invalid_argument("consumer \"" + name +
                                "\" handles no event type");
  if (!by_name_.emplace(name, std::move(c)).second)
    throw std::invalid_argument("consumer \"" + name +
                                "\" is registered twice");
  return *this;
}

consumer_ptr consumer_registry::find(const std::string& name) const {
  auto i = by_name_.find(name);
  return i == by_name_.end() ? nullptr : i->second;
}

std::string
consumer_registry::not_enabled(const std::vector<std::string>& enabled) const {
  for (auto& [name, c] : by_name_) {
    if (builtins_.count(name) ||
        std::find(enabled.begin(), enabled.end(), name) != enabled.end())
      continue;
    std::string list;
    for (auto& e : enabled)
      list += (list.empty() ? "" : ", ") + e;
    return "consumer \"" + name +
           "\" is registered but not in consumer.enabled (" + list +
           "): it would never run; enable it or do not register it";
  }
  return {};
}

std::vector<std::string> consumer_registry::names() const {
  std::vector<std::string> out;
  for (auto& [name, c] : by_name_)
    out.push_back(name);
  return out;
}

} // namespace ef
