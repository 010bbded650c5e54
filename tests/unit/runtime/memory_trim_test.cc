// The memory trim rule (runtime/memory_trim.h), and a trim that gives a burst's memory back.

#include "runtime/memory_trim.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace sluice::runtime {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(MemoryTrim, WorthTrimming) {
  struct Case {
    const char* name;
    size_t rss_mib, in_use_mib, after_last_mib;
    bool want;
  };
  const Case cases[] = {
      {"after a burst: 100 resident, 10 in use", 100, 10, 0, true},
      {"slack within 16 MiB", 25, 10, 0, false},
      {"slack within what is in use (a big snapshot)", 150, 100, 0, false},
      {"slack beyond what is in use", 250, 100, 0, true},
      {"the last trim left 90 (not malloc's): no trim until 106", 100, 10, 90, false},
      {"grown 16 MiB past the last trim", 107, 10, 90, true},
  };
  for (const Case& c : cases) {
    MemoryUse now{c.rss_mib * kMiB, c.in_use_mib * kMiB};
    EXPECT_EQ(worth_trimming(now, c.after_last_mib * kMiB, 16 * kMiB), c.want) << c.name;
  }
}

// What glibc keeps after another thread frees a burst of small blocks, a few of which live on
// (a connection that stays, say) so the arena cannot simply shrink, goes back at a trim.
TEST(MemoryTrim, TrimReturnsWhatABurstFreed) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
    defined(SLUICE_SANITIZER_RUNTIME)
  GTEST_SKIP() << "a sanitizer's allocator, not glibc's, holds this memory";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "a sanitizer's allocator, not glibc's, holds this memory";
#endif
#endif
  std::vector<std::unique_ptr<char[]>> survivors;
  std::thread([&survivors] {
    std::vector<std::unique_ptr<char[]>> burst;
    for (int i = 0; i < 200000; ++i) {
      burst.emplace_back(new char[1024]);
      burst.back()[0] = 1;  // resident
    }
    for (size_t i = 0; i < burst.size(); i += 64) {
      survivors.push_back(std::move(burst[i]));
    }
  }).join();
  MemoryUse before = memory_use();
  ASSERT_GT(before.rss, before.in_use + 64 * kMiB) << "nothing kept: no test";
  MemoryTrimmer trimmer;
  EXPECT_FALSE(trimmer.maybe_trim(0));  // checked once a second
  EXPECT_TRUE(trimmer.maybe_trim(1000));
  EXPECT_LT(memory_use().rss, before.rss - 64 * kMiB);
  EXPECT_FALSE(trimmer.maybe_trim(2000));  // nothing new to give back
}

}  // namespace
}  // namespace sluice::runtime
