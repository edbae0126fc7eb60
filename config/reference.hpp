#pragma once

#include <string>

namespace ef::config {

/// The configuration reference in Markdown, generated from options(): the
/// single source docs/config.md is checked against.
std::string reference_markdown();

/// Every key with its default as an INI file, one `[section]` per key
/// prefix, each key under its description: config/eventforge.ini.example.
/// Numbers and booleans are bare, everything else a quoted string, as CAF's
/// INI syntax wants them.
std::string reference_ini();

} // namespace ef::config
