#include "router/str_map.h"

#include "router/text.h"

namespace sluice::router {

bool StrMap::slot_holds(const Slot& s, uint64_t hash, std::string_view key) const {
  return s.hash == hash && s.key_len == key.size() &&
         bytes_equal(arena_.data() + s.key_begin, key.data(), key.size());
}

uint32_t* StrMap::insert(std::string_view key) {
  if ((size_ + 1) * 2 > slots_.size()) {
    grow();
  }
  const uint64_t h = hash_bytes(key);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.key_len == kNone) {
      s.hash = h;
      s.key_begin = static_cast<uint32_t>(arena_.size());
      s.key_len = static_cast<uint32_t>(key.size());
      arena_ += key;
      ++size_;
      return &s.value;
    }
    if (slot_holds(s, h, key)) {
      return &s.value;
    }
  }
}

uint32_t StrMap::find(std::string_view key) const {
  if (size_ == 0) {
    return kNone;
  }
  const uint64_t h = hash_bytes(key);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.key_len == kNone) {
      return kNone;
    }
    if (slot_holds(s, h, key)) {
      return s.value;
    }
  }
}

void StrMap::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 8 : old.size() * 2, Slot{});
  const size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.key_len == kNone) {
      continue;
    }
    size_t i = s.hash & mask;
    while (slots_[i].key_len != kNone) {
      i = (i + 1) & mask;
    }
    slots_[i] = s;
  }
}

}  // namespace sluice::router
