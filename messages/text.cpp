#include "messages/text.hpp"

namespace ef {

namespace {

/// Length of the well-formed UTF-8 sequence at s[i] (1-4), or 0 if the bytes
/// there are not one (RFC 3629, table 3-7 of the Unicode standard). NUL
/// counts as not well-formed: neither PostgreSQL text nor C strings hold it.
size_t sequence_at(std::string_view s, size_t i) {
  auto byte = [&](size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0x100;
  };
  auto in = [](unsigned b, unsigned lo, unsigned hi) {
    return b >= lo && b <= hi;
  };
  auto b0 = byte(0);
  if (b0 == 0)
    return 0;
  if (b0 < 0x80)
    return 1;
  if (in(b0, 0xc2, 0xdf))
    return in(byte(1), 0x80, 0xbf) ? 2 : 0;
  if (b0 == 0xe0)
    return in(byte(1), 0xa0, 0xbf) && in(byte(2), 0x80, 0xbf) ? 3 : 0;
  if (in(b0, 0xe1, 0xec) || in(b0, 0xee, 0xef))
    return in(byte(1), 0x80, 0xbf) && in(byte(2), 0x80, 0xbf) ? 3 : 0;
  if (b0 == 0xed) // no UTF-16 surrogates
    return in(byte(1), 0x80, 0x9f) && in(byte(2), 0x80, 0xbf) ? 3 : 0;
  if (b0 == 0xf0)
    return in(byte(1), 0x90, 0xbf) && in(byte(2), 0x80, 0xbf) &&
               in(byte(3), 0x80, 0xbf)
             ? 4
             : 0;
  if (in(b0, 0xf1, 0xf3))
    return in(byte(1), 0x80, 0xbf) && in(byte(2), 0x80, 0xbf) &&
               in(byte(3), 0x80, 0xbf)
             ? 4
             : 0;
  if (b0 == 0xf4)
    return in(byte(1), 0x80, 0x8f) && in(byte(2), 0x80, 0xbf) &&
               in(byte(3), 0x80, 0xbf)
             ? 4
             : 0;
  return 0;
}

} // namespace

bool is_text(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    auto n = sequence_at(bytes, i);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

std::string printable(std::string_view bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    auto n = sequence_at(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    auto c = static_cast<unsigned char>(bytes[i++]);
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 0xf];
  }
  return out;
}

std::string array_literal(const std::vector<std::int64_t>& xs) {
  std::string out = "{";
  for (size_t i = 0; i < xs.size(); ++i)
    out += (i ? "," : "") + std::to_string(xs[i]);
  return out + "}";
}

namespace {

// Double-quoted, with \ and " escaped: a customer ID may hold commas,
// braces, quotes or spaces (or spell NULL).
void append_quoted(std::string& out, const std::string& x) {
  out += '"';
  for (char ch : x) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    out += ch;
  }
  out += '"';
}

} // namespace

std::string array_literal(const std::vector<std::string>& names) {
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    out += i ? "," : "";
    append_quoted(out, names[i]);
  }
  return out + "}";
}

std::string
nullable_array_literal(const std::vector<std::optional<std::string>>& xs) {
  std::string out = "{";
  for (size_t i = 0; i < xs.size(); ++i) {
    out += i ? "," : "";
    if (xs[i])
      append_quoted(out, *xs[i]);
    else
      out += "NULL"; // unquoted: the SQL NULL
  }
  return out + "}";
}

} // namespace ef
