#include "bench/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace sluice::bench {
namespace {

// The value a sorted reference gives for percentile p (rank ceil(p/100 * n), at least 1).
uint64_t reference_percentile(const std::vector<uint64_t>& sorted, double p) {
  auto rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(sorted.size()) / 100.0));
  rank = std::clamp<uint64_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// Checks every interesting percentile against the reference within bucket precision: the
// histogram reports the top of the bucket, so it is >= the true value and at most 1/1024 above.
void expect_matches_reference(const Histogram& h, std::vector<uint64_t> values) {
  std::sort(values.begin(), values.end());
  for (double p : {0.0, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    uint64_t ref = reference_percentile(values, p);
    uint64_t got = h.value_at_percentile(p);
    EXPECT_GE(got, ref) << "p" << p;
    EXPECT_LE(got, ref + ref / 1024) << "p" << p;
  }
  long double sum = 0;
  for (uint64_t v : values) {
    sum += v;
  }
  long double mean = sum / values.size();
  long double var = 0;
  for (uint64_t v : values) {
    var += (v - mean) * (v - mean);
  }
  double stdev = std::sqrt(static_cast<double>(var / values.size()));
  EXPECT_NEAR(h.mean(), static_cast<double>(mean), 1e-9 * static_cast<double>(mean));
  EXPECT_NEAR(h.stdev(), stdev, 1e-6 * stdev);
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.max(), values.back());
  EXPECT_EQ(h.count(), values.size());
}

TEST(HistogramTest, EmptyReportsZeros) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.stdev(), 0.0);
  EXPECT_EQ(h.value_at_percentile(50), 0u);
  EXPECT_EQ(h.value_at_percentile(100), 0u);
  int buckets = 0;
  h.for_each_bucket([&](const Histogram::Bucket&) { ++buckets; });
  EXPECT_EQ(buckets, 0);
}

TEST(HistogramTest, OneValueIsEveryPercentile) {
  Histogram h;
  h.record(123'456);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.min(), 123'456u);
  EXPECT_EQ(h.max(), 123'456u);
  EXPECT_EQ(h.mean(), 123'456.0);
  EXPECT_EQ(h.stdev(), 0.0);
  for (double p : {0.0, 50.0, 99.999, 100.0}) {
    EXPECT_EQ(h.value_at_percentile(p), 123'456u) << p;  // clamped to [min, max]
  }
}

TEST(HistogramTest, OneToHundredMicroseconds) {
  Histogram h;
  for (uint64_t us = 1; us <= 100; ++us) {
    h.record(us * 1000);
  }
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.mean(), 50'500.0);
  EXPECT_NEAR(h.stdev(), std::sqrt((100.0 * 100.0 - 1) / 12.0) * 1000, 1e-6);
  EXPECT_GE(h.value_at_percentile(50), 50'000u);
  EXPECT_LE(h.value_at_percentile(50), 50'000u + 50'000u / 1024);
  EXPECT_GE(h.value_at_percentile(99), 99'000u);
  EXPECT_LE(h.value_at_percentile(99), 99'000u + 99'000u / 1024);
  EXPECT_EQ(h.value_at_percentile(100), 100'000u);
  EXPECT_EQ(h.value_at_percentile(0), 1'000u);
  EXPECT_EQ(h.value_at_percentile(1), 1'000u);
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (uint64_t v = 0; v < 2048; ++v) {
    h.record(v);
  }
  EXPECT_EQ(h.value_at_percentile(50), 1023u);
  int buckets = 0;
  h.for_each_bucket([&](const Histogram::Bucket& b) {
    EXPECT_EQ(b.low, b.high);
    EXPECT_EQ(b.count, 1u);
    ++buckets;
  });
  EXPECT_EQ(buckets, 2048);
}

TEST(HistogramTest, UniformMatchesSortedReference) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint64_t> dist(1, 50'000'000);
  Histogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    values.push_back(dist(rng));
    h.record(values.back());
  }
  expect_matches_reference(h, values);
}

TEST(HistogramTest, ExponentialMatchesSortedReference) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> dist(1.0 / 200'000.0);  // mean 200 us, long tail
  Histogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    values.push_back(static_cast<uint64_t>(dist(rng)) + 1);
    h.record(values.back());
  }
  expect_matches_reference(h, values);
}

TEST(HistogramTest, RecordWithCount) {
  Histogram h;
  h.record(5'000, 4);
  h.record(1'000, 0);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.mean(), 5'000.0);
  EXPECT_EQ(h.min(), 5'000u);
}

TEST(HistogramTest, MergeEqualsRecordingBoth) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint64_t> small(1, 10'000), big(1'000'000, 900'000'000);
  Histogram a, b, both;
  for (int i = 0; i < 10'000; ++i) {
    uint64_t x = small(rng), y = big(rng);
    a.record(x);
    b.record(y);
    both.record(x);
    both.record(y);
  }
  a.merge(b);
  a.merge(Histogram());  // merging an empty one changes nothing
  EXPECT_EQ(a.count(), both.count());
  EXPECT_EQ(a.min(), both.min());
  EXPECT_EQ(a.max(), both.max());
  EXPECT_EQ(a.mean(), both.mean());
  EXPECT_DOUBLE_EQ(a.stdev(), both.stdev());
  for (double p = 0; p <= 100; p += 0.5) {
    EXPECT_EQ(a.value_at_percentile(p), both.value_at_percentile(p)) << p;
  }
  std::vector<Histogram::Bucket> ba, bb;
  a.for_each_bucket([&](const Histogram::Bucket& x) { ba.push_back(x); });
  both.for_each_bucket([&](const Histogram::Bucket& x) { bb.push_back(x); });
  ASSERT_EQ(ba.size(), bb.size());
  for (size_t i = 0; i < ba.size(); ++i) {
    EXPECT_EQ(ba[i].low, bb[i].low);
    EXPECT_EQ(ba[i].count, bb[i].count);
  }
}

TEST(HistogramTest, HugeValuesClampButMaxStaysExact) {
  Histogram h;
  h.record(1'000);
  h.record(uint64_t{1} << 50);
  h.record(UINT64_MAX);
  EXPECT_EQ(h.max(), UINT64_MAX);
  EXPECT_EQ(h.value_at_percentile(100), UINT64_MAX);
  EXPECT_EQ(h.value_at_percentile(0), 1'000u);
  EXPECT_NEAR(h.mean(), (1000.0 + std::ldexp(1.0, 50) + 18446744073709551615.0) / 3, 1e5);
  Histogram::Bucket top{};
  h.for_each_bucket([&](const Histogram::Bucket& b) { top = b; });
  EXPECT_EQ(top.count, 2u);  // both clamped into the top bucket
  EXPECT_EQ(top.high, Histogram::kHighestTrackable);
  // Just inside the range is still tracked on its own.
  Histogram g;
  g.record(Histogram::kHighestTrackable - (uint64_t{1} << 30));
  EXPECT_LT(g.value_at_percentile(50), Histogram::kHighestTrackable);
}

TEST(HistogramTest, PercentileIsMonotoneInP) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(12.0, 1.5);
  Histogram h;
  for (int i = 0; i < 50'000; ++i) {
    h.record(static_cast<uint64_t>(dist(rng)));
  }
  uint64_t prev = 0;
  for (double p = 0; p <= 100.0; p += 0.01) {
    uint64_t v = h.value_at_percentile(p);
    EXPECT_GE(v, prev) << p;
    prev = v;
  }
  EXPECT_EQ(h.value_at_percentile(100), h.max());
  EXPECT_EQ(h.value_at_percentile(150), h.max());  // p is clamped
  EXPECT_EQ(h.value_at_percentile(-3), h.min());
}

TEST(HistogramTest, BucketsTileTheRangeWithBoundedWidth) {
  size_t last = Histogram::index_of(Histogram::kHighestTrackable);
  for (size_t i = 0; i < last; ++i) {
    ASSERT_EQ(Histogram::highest_equivalent(i) + 1, Histogram::lowest_equivalent(i + 1)) << i;
    uint64_t low = Histogram::lowest_equivalent(i);
    uint64_t width = Histogram::highest_equivalent(i) - low + 1;
    ASSERT_LE(width, std::max<uint64_t>(1, low / 1024)) << i;
    ASSERT_EQ(Histogram::index_of(low), i);
    ASSERT_EQ(Histogram::index_of(Histogram::highest_equivalent(i)), i);
  }
  EXPECT_EQ(Histogram::highest_equivalent(last), Histogram::kHighestTrackable);
}

TEST(HistogramTest, ResetEmpties) {
  Histogram h;
  h.record(10);
  h.record(1'000'000);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.value_at_percentile(50), 0u);
  h.record(77);
  EXPECT_EQ(h.min(), 77u);
  EXPECT_EQ(h.value_at_percentile(100), 77u);
}

}  // namespace
}  // namespace sluice::bench
