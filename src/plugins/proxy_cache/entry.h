#pragma once
// One cached response: its status, the fields the client gets (stored rendered, so a hit
// never parses anything), its body (memory strategy) and its times.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/message.h"

namespace sluice::plugins::proxy_cache {

// Seconds since the Unix epoch (wall clock: a disk entry's times outlive the process).
int64_t now_s();

// Thread: any (immutable once stored)
struct Entry {
  std::string key;
  int status = 0;
  std::string head;                  // the fields' names and values, back to back
  std::vector<http::Header> fields;  // views into `head`
  std::string body;                  // memory strategy: the whole body
  int64_t created = 0;               // Unix seconds
  int64_t ttl = 0;                   // seconds
  int64_t expires() const { return created + ttl; }
  // What the entry counts against its zone's memory_size.
  size_t cost() const {
    return sizeof(Entry) + key.size() + head.size() + body.size() +
           fields.size() * sizeof(http::Header) + 64;
  }

  // Adds a field; call freeze() after the last.
  void add_field(std::string_view name, std::string_view value);
  // Points `fields` into `head` (after the last add_field, or after `head` was loaded).
  void freeze();
  // Serialises / reads the fields as "name\0value\0" pairs (the disk file's head block).
  const std::string& head_block() const { return head; }
  bool load_head(std::string_view block);

 private:
  std::vector<uint32_t> lens_;  // name, value lengths while adding
};

using EntryPtr = std::shared_ptr<const Entry>;

// Whether an upstream field is kept with the entry: not hop-by-hop, not Content-Length (the
// hit states its own), not Apisix-Cache-Status, not a rate-limit remainder (APISIX's
// overwritable_header).
bool stored_field(std::string_view name);

// 64-bit FNV-1a of the key: the zones' index, the disk file's name.
uint64_t key_hash(std::string_view key);
// A fast checksum of a byte stream (the disk file's head and body), the same whatever pieces
// the stream arrives in.
// Thread: one at a time
class Checksum {
 public:
  void add(std::string_view data);
  uint64_t value() const;

 private:
  void word(uint64_t w) {
    h_ = (h_ ^ w) * 0xff51afd7ed558ccdull;
    h_ ^= h_ >> 29;
  }
  uint64_t h_ = 0x9e3779b97f4a7c15ull;
  uint64_t total_ = 0;
  unsigned char tail_[8] = {};
  size_t n_ = 0;  // bytes in tail_
};

}  // namespace sluice::plugins::proxy_cache
