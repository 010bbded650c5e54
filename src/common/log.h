#pragma once
// Leveled logging to stderr. The level check is one relaxed load, so a disabled debug line
// costs nothing on the request path.

#include <fmt/format.h>

#include <atomic>
#include <string_view>

namespace sluice::common {

enum class LogLevel : int { kDebug = 0, kInfo, kNotice, kWarn, kError, kCrit, kAlert, kEmerg };

// Parses nginx's level names (debug, info, notice, warn, error, crit, alert, emerg).
bool parse_log_level(std::string_view name, LogLevel* out);

extern std::atomic<int> g_log_level;

inline bool log_enabled(LogLevel level) {
  return static_cast<int>(level) >= g_log_level.load(std::memory_order_relaxed);
}
void set_log_level(LogLevel level);
void log_write(LogLevel level, std::string_view message);

}  // namespace sluice::common

#define SLUICE_LOG(level, ...)                                                                    \
  do {                                                                                            \
    if (::sluice::common::log_enabled(::sluice::common::LogLevel::level)) {                       \
      ::sluice::common::log_write(::sluice::common::LogLevel::level, ::fmt::format(__VA_ARGS__)); \
    }                                                                                             \
  } while (0)
