#include "messages/ids.hpp"

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <random>

namespace ef {

std::string new_uuid_v7() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  auto ms = static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch())
      .count());
  std::uint64_t hi = (ms << 16) | 0x7000 | (rng() & 0x0fff);
  std::uint64_t lo = (rng() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20)
      out += '-';
    std::uint64_t word = i < 16 ? hi : lo;
    int shift = 60 - 4 * (i % 16);
    out += hex[(word >> shift) & 0xf];
  }
  return out;
}

bool is_uuid(const std::string& s) {
  if (s.size() != 36)
    return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-')
        return false;
    } else if (!std::isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

int shard_of(const std::string& order_id, int shards) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : order_id) {
    h ^= c;
    h *= 16777619u;
  }
  return static_cast<int>(h % static_cast<std::uint32_t>(shards));
}

std::string now_rfc3339() {
  auto now = std::chrono::system_clock::now();
  auto t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
              now.time_since_epoch())
              .count() %
            1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

double seconds_since_rfc3339(const std::string& rfc3339) {
  std::tm tm{};
  int frac_digits = 0;
  long frac = 0;
  if (std::sscanf(rfc3339.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year,
                  &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec) != 6)
    return 0;
  auto dot = rfc3339.find('.');
  if (dot != std::string::npos)
    for (size_t i = dot + 1;
         i < rfc3339.size() &&
         std::isdigit(static_cast<unsigned char>(rfc3339[i]));
         ++i, ++frac_digits)
      frac = frac * 10 + (rfc3339[i] - '0');
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  double at = static_cast<double>(timegm(&tm)) +
              static_cast<double>(frac) / std::pow(10.0, frac_digits);
  auto now = std::chrono::duration<double>(
               std::chrono::system_clock::now().time_since_epoch())
               .count();
  return now > at ? now - at : 0;
}

} // namespace ef
