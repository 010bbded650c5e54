#include "plugins/limit_count/word_table.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>

#include "common/strings.h"

namespace sluice::plugins::limit_count {

WordTable::WordTable(size_t capacity) {
  if (capacity == 0) {
    return;
  }
  const size_t n = std::bit_ceil(std::min(capacity, size_t{1} << 40));
  void* p = mmap(nullptr, n * sizeof(Slot), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return;
  }
  slots_ = static_cast<Slot*>(p);
  capacity_ = n;
  mask_ = n - 1;
  probes_ = std::min(n, kProbeLimit);
}

WordTable::~WordTable() {
  if (slots_ != nullptr) {
    munmap(slots_, capacity_ * sizeof(Slot));
  }
}

uint64_t* WordTable::word(uint64_t fp) {
  for (size_t i = 0; i < probes_; ++i) {
    Slot& s = slots_[(fp + i) & mask_];
    std::atomic_ref<uint64_t> slot_fp(s.fp);
    uint64_t seen = slot_fp.load(std::memory_order_relaxed);
    if (seen == 0 && slot_fp.compare_exchange_strong(seen, fp, std::memory_order_relaxed)) {
      used_.fetch_add(1, std::memory_order_relaxed);
      return &s.word;
    }
    if (seen == fp) {
      return &s.word;
    }
  }
  overflowed_.fetch_add(1, std::memory_order_relaxed);
  return &overflow_;
}

uint64_t stable_hash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h = (h ^ c) * 0x100000001b3ull;
  }
  return h;
}

std::string conf_scope(std::string_view owner, const plugin::Json& conf) {
  std::string scope(owner);
  scope += ':';
  common::append_uint(scope, stable_hash(conf.dump()));
  return scope;
}

std::shared_ptr<WordTable> local_table(plugin::Shared& shared, const std::string& name) {
  size_t slots = shared.attr_of(name).value("local_keys", size_t{1} << 20);
  return shared.get<WordTable>(name + "/local", [&] { return std::make_shared<WordTable>(slots); });
}

}  // namespace sluice::plugins::limit_count
