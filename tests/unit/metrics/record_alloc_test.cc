// Recording a label set the worker has seen must not allocate. This file replaces the global
// operator new for the whole unit_metrics binary; it only counts, per thread, and otherwise
// behaves like the default.

#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "metrics/http_metrics.h"
#include "unit/metrics/sample.h"

namespace {
thread_local size_t t_news = 0;  // operator new calls made by this thread
}  // namespace

void* operator new(std::size_t n) {
  ++t_news;
  if (void* p = std::malloc(n == 0 ? 1 : n)) {
    return p;
  }
  throw std::bad_alloc();
}
// GCC sees free() of what `new` returned where these are inlined, not that this `new` is
// malloc: the pairing is right.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace sluice::metrics {
namespace {

using testing::sample;

TEST(RecordAllocTest, SeenLabelSetsRecordWithoutAllocating) {
  HttpMetrics m(100);
  HttpSample short_set = sample("1", 200, 3, 2);
  HttpSample long_set =
      sample("a-route-with-a-name-long-enough-to-defeat-small-strings", 404, 70000, -1);
  long_set.labels.service = "a-service-name-long-enough-to-defeat-small-string-storage";
  m.record(long_set);
  m.record(short_set);

  const size_t before = t_news;
  for (int i = 0; i < 1000; ++i) {
    m.record(i % 2 == 0 ? short_set : long_set);
  }
  EXPECT_EQ(t_news - before, 0u);
  EXPECT_EQ(m.dropped(), 0u);

  // The counter does see the allocations of a new label set, so the zero above means something.
  m.record(sample("2"));
  EXPECT_GT(t_news - before, 0u);
}

TEST(RecordAllocTest, SamplesDroppedAtTheCapDoNotAllocate) {
  HttpMetrics m(2);
  m.record(sample("1"));
  m.record(sample("unseen"));  // dropped; may grow the key buffer once
  const size_t before = t_news;
  for (int i = 0; i < 100; ++i) {
    m.record(sample("unseen"));
  }
  EXPECT_EQ(t_news - before, 0u);
  EXPECT_EQ(m.dropped(), 101u);
}

}  // namespace
}  // namespace sluice::metrics
