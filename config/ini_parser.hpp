#pragma once

#include "config/options.hpp"

#include <string>

namespace ef::config {

/// Result of reading a CAF-style INI file: `[section]` headers followed by
/// `key=value` lines; strings are double-quoted, `;` and `#` start comments.
struct ini_result {
  raw_values values; ///< "section.key" -> unquoted value text
  std::string error; ///< "FILE:LINE: reason" on failure, else empty
  bool ok() const { return error.empty(); }
};

/// Parses INI text; `origin` names the source in error messages.
ini_result parse_ini(const std::string& text, const std::string& origin);

/// Reads and parses an INI file; a missing or unreadable file is an error.
ini_result read_ini_file(const std::string& path);

} // namespace ef::config
