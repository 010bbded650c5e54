#pragma once
// An HDR-style latency histogram: log-linear buckets over nanoseconds with 3 significant
// decimal digits, fixed memory, no allocation when recording.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::bench {

// Counts values in buckets whose width is at most 1/1024 of their lower bound (values below
// 2048 are exact). Like HdrHistogram, each power of two above 2048 gets 1024 sub-buckets.
// Thread: worker (one per load thread; merged on the control thread at the end)
class Histogram {
 public:
  static constexpr int kSubBucketBits = 11;  // 2048 sub-buckets in the first bucket
  static constexpr uint64_t kSubBucketCount = uint64_t{1} << kSubBucketBits;
  static constexpr uint64_t kHalfCount = kSubBucketCount / 2;
  static constexpr int kMaxBits = 40;  // values below 2^40 ns (~18 minutes) are tracked
  static constexpr uint64_t kHighestTrackable = (uint64_t{1} << kMaxBits) - 1;

  Histogram();

  // Values above kHighestTrackable are counted in the top bucket; min/max/mean stay exact.
  void record(uint64_t ns, uint64_t count = 1) {
    if (count == 0) {
      return;
    }
    size_t i = index_of(ns < kHighestTrackable ? ns : kHighestTrackable);
    counts_[i] += count;
    if (i < lowest_index_) {
      lowest_index_ = i;
    }
    if (i > highest_index_) {
      highest_index_ = i;
    }
    total_ += count;
    sum_ += static_cast<unsigned __int128>(ns) * count;
    long double v = static_cast<long double>(ns);
    sum_sq_ += v * v * static_cast<long double>(count);
    if (ns < min_) {
      min_ = ns;
    }
    if (ns > max_) {
      max_ = ns;
    }
  }

  void merge(const Histogram& other);
  void reset();

  uint64_t count() const { return total_; }
  uint64_t min() const { return total_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double mean() const;
  double stdev() const;  // population standard deviation
  // The highest value equivalent to the bucket holding rank ceil(p/100 * count), clamped to
  // [min, max]; 0 when empty. p is clamped to [0, 100].
  uint64_t value_at_percentile(double p) const;

  // One non-empty bucket: values in [low, high] (inclusive) were counted `count` times.
  struct Bucket {
    uint64_t low;
    uint64_t high;
    uint64_t count;
  };
  // Calls fn(const Bucket&) for each non-empty bucket, in increasing order.
  template <typename Fn>
  void for_each_bucket(Fn&& fn) const {
    if (total_ == 0) {
      return;
    }
    for (size_t i = lowest_index_; i <= highest_index_; ++i) {
      if (counts_[i] != 0) {
        fn(Bucket{lowest_equivalent(i), highest_equivalent(i), counts_[i]});
      }
    }
  }

  // Bucket arithmetic, public for tests.
  static constexpr size_t index_of(uint64_t v) {
    // Bucket b holds [1024 << b, 2048 << b) for b >= 1; bucket 0 holds [0, 2048).
    int b = 63 - __builtin_clzll(v | (kSubBucketCount - 1)) - (kSubBucketBits - 1);
    uint64_t sub = v >> b;  // in [1024, 2048) for b >= 1, [0, 2048) for b == 0
    return (static_cast<size_t>(b) << (kSubBucketBits - 1)) + sub;
  }
  static uint64_t lowest_equivalent(size_t index);
  static uint64_t highest_equivalent(size_t index);

 private:
  std::vector<uint64_t> counts_;
  size_t lowest_index_;
  size_t highest_index_ = 0;
  uint64_t total_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  unsigned __int128 sum_ = 0;
  long double sum_sq_ = 0;
};

}  // namespace sluice::bench
