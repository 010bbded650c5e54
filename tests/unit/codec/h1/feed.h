#pragma once
// Test helpers for feeding parser input the way sockets deliver it: whole, byte by byte, or
// cut at random points, each time from an exact-size heap copy so that ASan reports any read
// past the end of the span under test.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::h1 {

// A heap copy of exactly s.size() bytes.
class ExactCopy {
 public:
  explicit ExactCopy(std::string_view s) : size_(s.size()), data_(std::make_unique<char[]>(size_)) {
    if (size_ > 0) {
      std::memcpy(data_.get(), s.data(), size_);
    }
  }
  std::string_view view() const { return std::string_view(data_.get(), size_); }

 private:
  size_t size_;
  std::unique_ptr<char[]> data_;
};

// `count` sorted cut points in (0, n), deterministic for a given seed.
inline std::vector<size_t> random_cuts(size_t n, int count, uint32_t seed) {
  std::vector<size_t> cuts;
  if (n < 2) {
    return cuts;
  }
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(1, n - 1);
  for (int i = 0; i < count; ++i) {
    cuts.push_back(pick(rng));
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

// Every prefix length 0..n, or for long inputs a sample of them (the parsers rescan from the
// start, so checking every prefix of a 32 KiB head would be quadratic).
inline std::vector<size_t> prefix_lengths(size_t n) {
  constexpr size_t kAllUpTo = 4096;
  if (n <= kAllUpTo) {
    std::vector<size_t> all(n + 1);
    for (size_t i = 0; i <= n; ++i) {
      all[i] = i;
    }
    return all;
  }
  std::vector<size_t> some = random_cuts(n, 300, 7);
  for (size_t i = 0; i < 64; ++i) {
    some.push_back(i);
    some.push_back(n - i);
  }
  std::sort(some.begin(), some.end());
  return some;
}

inline constexpr std::string_view kIncompleteText = "incomplete";

// Checks that a stateless parser, described by `parse` (input -> text of its result, exactly
// kIncompleteText while incomplete), gives every prefix of `input` either kIncomplete or the
// whole input's result, and that once a prefix has a result every longer one has the same.
// The same for 50 random read boundaries. Returns the shortest prefix length with a result.
template <typename Parse>
size_t expect_same_at_every_split(std::string_view input, Parse parse) {
  const std::string whole = parse(input);
  size_t first = input.size() + 1;
  for (size_t k : prefix_lengths(input.size())) {
    std::string got = parse(input.substr(0, k));
    if (got == kIncompleteText && first > input.size()) {
      continue;
    }
    EXPECT_EQ(got, whole) << "prefix of " << k << " bytes";
    first = std::min(first, k);
  }
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    std::vector<size_t> reads = random_cuts(input.size(), 50, seed);
    reads.push_back(input.size());
    std::string got(kIncompleteText);
    for (size_t k : reads) {
      got = parse(input.substr(0, k));
      if (got != kIncompleteText) {
        break;
      }
    }
    EXPECT_EQ(got, whole) << "reads cut with seed " << seed;
  }
  return first;
}

}  // namespace sluice::h1
