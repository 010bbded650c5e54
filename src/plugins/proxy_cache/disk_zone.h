#pragma once
// A disk zone: one file per entry under disk_path (in cache_levels subdirectories, as nginx
// lays them out), an index of them in memory rebuilt by reading every file's head at start,
// and disk_size kept by evicting the least recently used files.
//
// A file: a 64-byte head (magic, lengths, status, times, the checksums of the meta part and of
// the body), the key, the fields ("name\0value\0"...), the body. A file whose head, key or
// length does not check out is a miss and is removed, with a log line; a body whose checksum
// does not (read while it is served) ends that response early and removes the file.

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "plugins/proxy_cache/config.h"
#include "plugins/proxy_cache/entry.h"
#include "plugins/proxy_cache/zone.h"

namespace sluice::plugins::proxy_cache {

// Reads n bytes at `at` whole (short reads and EINTR retried); false on an error or EOF.
bool pread_all(int fd, char* buf, size_t n, uint64_t at);

inline constexpr size_t kFileHead = 64;

// The fixed head of a cache file.
struct FileHead {
  uint32_t key_len = 0, head_len = 0;
  uint64_t body_len = 0;
  int64_t created = 0, ttl = 0;
  uint32_t status = 0;
  uint64_t meta_sum = 0;  // over the numbers above, the key and the fields
  uint64_t body_sum = 0;
  void encode(char out[kFileHead]) const;
  bool decode(const char in[kFileHead]);
  uint64_t meta_checksum(std::string_view key, std::string_view fields) const;
};

// Thread: any (locked; file I/O happens outside the lock)
class DiskZone {
 public:
  // Makes disk_path (and its tmp/) and reads every cache file's head into the index.
  explicit DiskZone(const ZoneConf& c);

  enum class Find : uint8_t { kMiss, kExpired, kHit };
  // An open cache file, checked: its entry (fields, status, times; no body) and where its body
  // starts. The caller owns `fd`.
  struct Open {
    int fd = -1;
    Entry meta;
    uint64_t body_at = 0, body_len = 0, body_sum = 0;
  };
  // Looks `key` up in the index and opens its file; kExpired and kHit fill `out`.
  Find open(const std::string& key, uint64_t h, Open* out);
  bool purge(const std::string& key, uint64_t h);
  // A file within its TTL is indexed under `h`.
  bool fresh(uint64_t h);
  // nginx keeps a key it fetched without storing (no_cache, an uncached status) and reports
  // EXPIRED for it afterwards, as APISIX's docs show; declined() says whether `h` is one.
  void decline(uint64_t h);
  bool declined(uint64_t h);
  // A file found broken while being served: dropped, with a log line.
  void broken(const std::string& key, uint64_t h, const char* why);

  // One entry being written: the response's body arrives piece by piece.
  // Thread: one worker
  class Writer {
   public:
    Writer() = default;
    Writer(const Writer&) = delete;
    ~Writer() { abort(); }
    // False (with a log line) when the file cannot be made.
    bool start(DiskZone* z, const Entry& meta);
    // False (with a log line, the file dropped) on a write error or past disk_size.
    bool write(std::string_view piece);
    // Renames the file into place and indexes it.
    bool commit();
    void abort();
    bool active() const { return fd_ >= 0; }

   private:
    DiskZone* z_ = nullptr;
    int fd_ = -1;
    std::string tmp_;
    std::string key_;
    FileHead head_;
    Checksum sum_;
  };

  uint64_t used() const;
  size_t count() const;
  const ZoneConf& conf() const { return conf_; }

  Fills fills;

 private:
  struct Item {
    uint64_t h;
    uint64_t size;
    int64_t expires;
  };
  using Lru = std::list<Item>;
  std::string path_of(uint64_t h) const;
  void scan(const std::string& dir, int depth);
  void index(uint64_t h, uint64_t size, int64_t expires);  // under mu_
  void unindex(uint64_t h);                                // under mu_
  bool read_file(const std::string& path, uint64_t h, Open* out, std::string* why);

  ZoneConf conf_;
  mutable std::mutex mu_;
  Lru lru_;
  std::unordered_map<uint64_t, Lru::iterator> index_;
  uint64_t used_ = 0;
  uint64_t tmp_seq_ = 0;
  std::unordered_set<uint64_t> declined_;  // bounded: cleared past kMaxDeclined
};

}  // namespace sluice::plugins::proxy_cache
