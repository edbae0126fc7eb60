#pragma once

#include <string>

namespace ef::config {

/// The configuration reference in Markdown, generated from options(): the
/// single source docs/config.md is checked against.
std::string reference_markdown();

} // namespace ef::config
