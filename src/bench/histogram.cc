#include "bench/histogram.h"

#include <algorithm>
#include <cmath>

namespace sluice::bench {

namespace {
constexpr size_t kNumCounts = Histogram::index_of(Histogram::kHighestTrackable) + 1;
}  // namespace

Histogram::Histogram() : counts_(kNumCounts, 0), lowest_index_(kNumCounts) {}

uint64_t Histogram::lowest_equivalent(size_t index) {
  if (index < kSubBucketCount) {
    return index;
  }
  size_t b = (index >> (kSubBucketBits - 1)) - 1;
  uint64_t sub = index - (b << (kSubBucketBits - 1));
  return sub << b;
}

uint64_t Histogram::highest_equivalent(size_t index) {
  if (index < kSubBucketCount) {
    return index;
  }
  size_t b = (index >> (kSubBucketBits - 1)) - 1;
  return lowest_equivalent(index) + (uint64_t{1} << b) - 1;
}

void Histogram::merge(const Histogram& other) {
  if (other.total_ == 0) {
    return;
  }
  for (size_t i = other.lowest_index_; i <= other.highest_index_; ++i) {
    counts_[i] += other.counts_[i];
  }
  lowest_index_ = std::min(lowest_index_, other.lowest_index_);
  highest_index_ = std::max(highest_index_, other.highest_index_);
  total_ += other.total_;
  sum_ += other.sum_;
  sum_sq_ += other.sum_sq_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void Histogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  lowest_index_ = kNumCounts;
  highest_index_ = 0;
  total_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
  sum_ = 0;
  sum_sq_ = 0;
}

double Histogram::mean() const {
  if (total_ == 0) {
    return 0;
  }
  return static_cast<double>(static_cast<long double>(sum_) / total_);
}

double Histogram::stdev() const {
  if (total_ < 2) {
    return 0;
  }
  long double n = total_;
  long double mean = static_cast<long double>(sum_) / n;
  long double var = sum_sq_ / n - mean * mean;
  return var > 0 ? static_cast<double>(std::sqrt(var)) : 0.0;
}

uint64_t Histogram::value_at_percentile(double p) const {
  if (total_ == 0) {
    return 0;
  }
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<uint64_t>(std::ceil(p * static_cast<double>(total_) / 100.0));
  rank = std::clamp<uint64_t>(rank, 1, total_);
  uint64_t seen = 0;
  for (size_t i = lowest_index_; i <= highest_index_; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      // The top bucket also holds every clamped value, so its upper end is max itself.
      uint64_t high = i == kNumCounts - 1 ? max_ : highest_equivalent(i);
      return std::clamp(high, min_, max_);
    }
  }
  return max_;
}

}  // namespace sluice::bench
