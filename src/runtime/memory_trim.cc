#include "runtime/memory_trim.h"

#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "common/log.h"

namespace sluice::runtime {

namespace {

constexpr int64_t kCheckEveryMs = 1000;

size_t rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) {
    return 0;
  }
  unsigned long size = 0, resident = 0;
  int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

MemoryUse memory_use() {
  struct mallinfo2 mi = mallinfo2();
  return MemoryUse{rss_bytes(), mi.uordblks + mi.hblkhd};
}

bool worth_trimming(const MemoryUse& now, size_t rss_after_trim, size_t min_slack) {
  size_t slack = now.in_use > min_slack ? now.in_use : min_slack;
  return now.rss > now.in_use + slack && now.rss > rss_after_trim + min_slack;
}

bool MemoryTrimmer::maybe_trim(int64_t now_ms) {
  if (now_ms - last_check_ms_ < kCheckEveryMs) {
    return false;
  }
  last_check_ms_ = now_ms;
  MemoryUse before = memory_use();
  if (!worth_trimming(before, rss_after_trim_, min_slack_)) {
    return false;
  }
  // malloc_trim(0) also releases the free pages inside each arena, not only its top: that is
  // where a burst's freed connections sit. Each arena is locked while it is trimmed.
  auto t0 = std::chrono::steady_clock::now();
  malloc_trim(0);
  auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  size_t after = rss_bytes();
  rss_after_trim_ = after;
  SLUICE_LOG(kInfo,
             "memory: returned {:.1f} MiB to the system in {} us (resident {:.1f} -> {:.1f} "
             "MiB, {:.1f} MiB in use)",
             (static_cast<double>(before.rss) - static_cast<double>(after)) / kMiB, us,
             static_cast<double>(before.rss) / kMiB, static_cast<double>(after) / kMiB,
             static_cast<double>(before.in_use) / kMiB);
  return true;
}

}  // namespace sluice::runtime
