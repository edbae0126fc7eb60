#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace ef::app {

/// A field the page shows as null when it is not known: an empty string,
/// or a negative offset, partition or count (the rows' "none").
inline nlohmann::json or_null(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

template <class Int>
nlohmann::json or_null(Int x) {
  return x < 0 ? nlohmann::json(nullptr) : nlohmann::json(x);
}

} // namespace ef::app
