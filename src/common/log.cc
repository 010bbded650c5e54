#include "common/log.h"

#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <ctime>

namespace sluice::common {

std::atomic<int> g_log_level{static_cast<int>(LogLevel::kWarn)};

namespace {
constexpr std::array<std::string_view, 8> kNames = {"debug", "info", "notice", "warn",
                                                    "error", "crit", "alert",  "emerg"};
}

bool parse_log_level(std::string_view name, LogLevel* out) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) {
      *out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

void set_log_level(LogLevel level) {
  g_log_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

void log_write(LogLevel level, std::string_view message) {
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm t;
  localtime_r(&tv.tv_sec, &t);
  char stamp[32];
  strftime(stamp, sizeof(stamp), "%Y/%m/%d %H:%M:%S", &t);
  // One write(2) per line so lines from different threads never interleave.
  std::string line =
      fmt::format("{} [{}] {}: {}\n", stamp, kNames[static_cast<int>(level)], getpid(), message);
  ssize_t r = ::write(STDERR_FILENO, line.data(), line.size());
  (void)r;
}

}  // namespace sluice::common
