#pragma once

#include <eventforge/config/settings.hpp>

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <utility>

/// EventForge's logging belongs to its host: every line goes through one
/// named spdlog logger ("eventforge"), which a host may give sinks, a level
/// or a replacement. ef::start applies the [log] settings to it (and only
/// to it); the host's own loggers are left alone.
namespace ef::log {

/// The name of EventForge's logger in spdlog's registry.
inline constexpr const char* logger_name = "eventforge";

/// EventForge's logger. Made at first use with the sinks of spdlog's
/// default logger at that moment (so by default it writes where the host's
/// default logger writes) and the registry's pattern and level, and
/// registered under logger_name (spdlog::get finds it).
std::shared_ptr<spdlog::logger> logger();

/// The same logger for writing one line: no lock and no reference count, so
/// a line below the level costs a load and a compare. What the wrappers
/// below use.
spdlog::logger& line_logger();

/// Replaces EventForge's logger from now on (registered under
/// logger_name; a logger of that name already registered is dropped).
void use(std::shared_ptr<spdlog::logger> replacement);

/// Applies [log] to EventForge's logger: `level` (trace ... off) and
/// `format` ("json": one JSON object per line, {"ts", "level", "msg",
/// and a hop's fields}). ef::start calls it.
void apply(const config::settings& cfg);

/// Whether EventForge's logger writes JSON (log.format=json).
bool json();

/// `s` as a JSON string literal, quotes included; bytes that are not UTF-8
/// become "\\xNN" first, so a line is always valid JSON.
std::string json_string(const std::string& s);

/// Logs `members` (a rendered JSON member list, `"k":"v",...`) at debug
/// level: with the JSON format they become the line's members as they are,
/// instead of one "msg".
void debug_members(const std::string& members);

template <class... Args>
void trace(spdlog::format_string_t<Args...> f, Args&&... args) {
  line_logger().trace(f, std::forward<Args>(args)...);
}
template <class... Args>
void debug(spdlog::format_string_t<Args...> f, Args&&... args) {
  line_logger().debug(f, std::forward<Args>(args)...);
}
template <class... Args>
void info(spdlog::format_string_t<Args...> f, Args&&... args) {
  line_logger().info(f, std::forward<Args>(args)...);
}
template <class... Args>
void warn(spdlog::format_string_t<Args...> f, Args&&... args) {
  line_logger().warn(f, std::forward<Args>(args)...);
}
template <class... Args>
void error(spdlog::format_string_t<Args...> f, Args&&... args) {
  line_logger().error(f, std::forward<Args>(args)...);
}
template <class... Args>
void critical(spdlog::format_string_t<Args...> f, Args&&... args) {
  line_logger().critical(f, std::forward<Args>(args)...);
}
/// At a level chosen at run time (e.g. warn once, then debug).
template <class... Args>
void at(spdlog::level::level_enum lvl, spdlog::format_string_t<Args...> f,
        Args&&... args) {
  line_logger().log(lvl, f, std::forward<Args>(args)...);
}

} // namespace ef::log
