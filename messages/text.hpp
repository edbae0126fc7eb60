#pragma once

#include <string>
#include <string_view>

namespace ef {

/// True if `bytes` is well-formed UTF-8 (no overlong forms, no surrogates,
/// nothing above U+10FFFF) and holds no NUL: text PostgreSQL and JSON
/// accept as is.
bool is_text(std::string_view bytes);

/// `bytes` as text that PostgreSQL, JSON and a terminal accept: well-formed
/// UTF-8 is kept, and every byte that is not part of it (and NUL) becomes
/// "\xNN". Identity for text. Used for what a foreign producer may put in a
/// record's key or headers.
std::string printable(std::string_view bytes);

} // namespace ef
