#pragma once
// Gives memory freed after a burst back to the system. glibc keeps what worker threads free in
// their arenas: after 30,000 connections that never sent a byte, RSS stayed at 100-170 MB with
// 10-15 MB in use. Checked once a second on the control thread; the request path pays nothing.

#include <cstddef>
#include <cstdint>

namespace sluice::runtime {

// What the allocator and the kernel say about this process's memory.
struct MemoryUse {
  size_t rss = 0;     // resident bytes (/proc/self/statm)
  size_t in_use = 0;  // bytes the program holds from malloc (mallinfo2: uordblks + hblkhd)
};

MemoryUse memory_use();

// The trim rule: resident memory exceeds what is in use by more than max(in use, `min_slack`)
// and has grown by `min_slack` since the last trim left it at `rss_after_trim` (0: none yet).
bool worth_trimming(const MemoryUse& now, size_t rss_after_trim, size_t min_slack);

// Thread: control
class MemoryTrimmer {
 public:
  // Trims by worth_trimming(): the second condition keeps memory that is not malloc's
  // (thread stacks, io_uring rings, a sanitizer's allocator) from a trim every second.
  explicit MemoryTrimmer(size_t min_slack = size_t{16} << 20) : min_slack_(min_slack) {}
  // Call periodically; returns true when it trimmed.
  bool maybe_trim(int64_t now_ms);

 private:
  size_t min_slack_;
  int64_t last_check_ms_ = 0;
  size_t rss_after_trim_ = 0;
};

}  // namespace sluice::runtime
