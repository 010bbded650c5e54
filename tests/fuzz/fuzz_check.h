#pragma once
// Helpers shared by the fuzz targets: an invariant check that aborts (so libFuzzer keeps the
// input as a crash artifact, and the corpus replay fails), exact-size copies that let ASan see
// reads past a prefix, and a cheap hash to derive cut points from the input itself.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace sluice::fuzz {

// Thread: any (test only). A heap copy of exactly s.size() bytes: a parser that reads past the
// end of the span it was given trips ASan even when the span is a prefix of a longer input.
class ExactCopy {
 public:
  explicit ExactCopy(std::string_view s) : size_(s.size()) {
    FUZZ_CHECK(size_ <= static_cast<size_t>(PTRDIFF_MAX));  // tells g++ the copy is bounded
    data_ = std::make_unique<char[]>(size_);
    std::copy(s.begin(), s.end(), data_.get());
  }
  std::string_view view() const { return std::string_view(data_.get(), size_); }
  const char* data() const { return data_.get(); }

 private:
  size_t size_;
  std::unique_ptr<char[]> data_;
};

// True when `v` is empty or lies within [base, base + n). Compared as integers: the views
// under test may point anywhere, and relational operators on unrelated pointers are not
// defined.
inline bool inside(std::string_view v, const char* base, size_t n) {
  if (v.empty()) {
    return true;
  }
  const auto b = reinterpret_cast<uintptr_t>(base);
  const auto p = reinterpret_cast<uintptr_t>(v.data());
  return p >= b && p - b <= n && v.size() <= n - (p - b);
}

// FNV-1a: deterministic cut points derived from the input, so a crash reproduces from the file.
inline uint64_t hash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  }
  return h;
}

}  // namespace sluice::fuzz
