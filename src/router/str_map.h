#pragma once
// StrMap: a string -> uint32_t open-addressing hash table, built once and then only read.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::router {

// Thread: any (immutable after the last insert). Lookups never allocate. Linear probing with a
// load factor of at most one half; each slot caches the full hash so most misses cost no
// string comparison, and keys live in one arena.
class StrMap {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // Returns the value slot for key, inserting it with kNone when new. The pointer is valid
  // until the next insert.
  uint32_t* insert(std::string_view key);
  // The value for key, or kNone.
  uint32_t find(std::string_view key) const;
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_begin = 0;    // in arena_
    uint32_t key_len = kNone;  // kNone = empty slot
    uint32_t value = kNone;
  };
  bool slot_holds(const Slot& s, uint64_t hash, std::string_view key) const;
  void grow();

  std::vector<Slot> slots_;  // size is a power of two, or zero
  std::string arena_;
  size_t size_ = 0;
};

}  // namespace sluice::router
