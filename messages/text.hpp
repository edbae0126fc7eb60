#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// PostgreSQL array literals for parameters cast with ::bigint[] / ::text[]
/// (libpqxx 6.4 has no array parameters). Text elements are quoted, so any
/// text is safe.
std::string array_literal(const std::vector<std::int64_t>& xs);
std::string array_literal(const std::vector<std::string>& names);
/// The same, with SQL NULL for an empty element.
std::string
nullable_array_literal(const std::vector<std::optional<std::string>>& xs);

} // namespace ef
