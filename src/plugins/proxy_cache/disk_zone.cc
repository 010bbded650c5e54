#include "plugins/proxy_cache/disk_zone.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace sluice::plugins::proxy_cache {

namespace {

constexpr char kMagic[8] = {'S', 'L', 'C', 'A', 'C', 'H', 'E', '1'};

template <class T>
void put(char*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}
template <class T>
T take(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::write(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      ::mkdir(path.substr(0, i).c_str(), 0700);
    }
  }
}

bool hex_name(const char* s, uint64_t* h) {
  if (std::strlen(s) != 16) {
    return false;
  }
  uint64_t v = 0;
  for (int i = 0; i < 16; ++i) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : (c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1);
    if (d < 0) {
      return false;
    }
    v = v << 4 | static_cast<uint64_t>(d);
  }
  *h = v;
  return true;
}

}  // namespace

bool pread_all(int fd, char* buf, size_t n, uint64_t at) {
  while (n > 0) {
    ssize_t r = ::pread(fd, buf, n, static_cast<off_t>(at));
    if (r <= 0) {
      if (r < 0 && errno == EINTR) {
        continue;
      }
      return false;
    }
    buf += r;
    n -= static_cast<size_t>(r);
    at += static_cast<uint64_t>(r);
  }
  return true;
}

void FileHead::encode(char out[kFileHead]) const {
  std::memset(out, 0, kFileHead);
  char* p = out;
  std::memcpy(p, kMagic, 8);
  p += 8;
  put(p, key_len);
  put(p, head_len);
  put(p, body_len);
  put(p, created);
  put(p, ttl);
  put(p, status);
  put(p, uint32_t{0});
  put(p, meta_sum);
  put(p, body_sum);
}

bool FileHead::decode(const char in[kFileHead]) {
  if (std::memcmp(in, kMagic, 8) != 0) {
    return false;
  }
  const char* p = in + 8;
  key_len = take<uint32_t>(p);
  head_len = take<uint32_t>(p);
  body_len = take<uint64_t>(p);
  created = take<int64_t>(p);
  ttl = take<int64_t>(p);
  status = take<uint32_t>(p);
  take<uint32_t>(p);
  meta_sum = take<uint64_t>(p);
  body_sum = take<uint64_t>(p);
  return key_len < (1u << 20) && head_len < (1u << 24);
}

uint64_t FileHead::meta_checksum(std::string_view key, std::string_view fields) const {
  Checksum c;
  char nums[40];
  char* p = nums;
  put(p, body_len);
  put(p, created);
  put(p, ttl);
  put(p, status);
  put(p, key_len);
  put(p, head_len);
  c.add(std::string_view(nums, static_cast<size_t>(p - nums)));
  c.add(key);
  c.add(fields);
  return c.value();
}

DiskZone::DiskZone(const ZoneConf& c) : conf_(c) {
  make_dirs(conf_.disk_path + "/tmp");
  // Leftovers of writes a stop cut short.
  if (DIR* d = ::opendir((conf_.disk_path + "/tmp").c_str()); d != nullptr) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') {
        ::unlink((conf_.disk_path + "/tmp/" + e->d_name).c_str());
      }
    }
    ::closedir(d);
  }
  scan(conf_.disk_path, 0);
  if (!index_.empty()) {
    SLUICE_LOG(kNotice, "proxy-cache: zone {}: {} entries ({} bytes) found under {}", conf_.name,
               index_.size(), used_, conf_.disk_path);
  }
}

std::string DiskZone::path_of(uint64_t h) const {
  std::string name = fmt::format("{:016x}", h);
  std::string p = conf_.disk_path;
  size_t end = name.size();
  for (int l : conf_.levels) {  // nginx: the levels are taken from the name's end
    p += '/';
    p.append(name, end - static_cast<size_t>(l), static_cast<size_t>(l));
    end -= static_cast<size_t>(l);
  }
  return p + '/' + name;
}

void DiskZone::scan(const std::string& dir, int depth) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return;
  }
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.' || (depth == 0 && std::strcmp(e->d_name, "tmp") == 0)) {
      continue;
    }
    std::string path = dir + '/' + e->d_name;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      continue;
    }
    uint64_t h = 0;
    if (S_ISDIR(st.st_mode)) {
      if (depth < static_cast<int>(conf_.levels.size())) {
        scan(path, depth + 1);
      }
      continue;
    }
    Open o;
    std::string why;
    if (!S_ISREG(st.st_mode) || !hex_name(e->d_name, &h) || path != path_of(h) ||
        !read_file(path, h, &o, &why)) {
      SLUICE_LOG(kWarn, "proxy-cache: zone {}: {}: not a good cache file ({}); removed", conf_.name,
                 path, why.empty() ? "unexpected name" : why);
      ::unlink(path.c_str());
      continue;
    }
    ::close(o.fd);
    index(h, static_cast<uint64_t>(st.st_size), o.meta.expires());
  }
  ::closedir(d);
}

void DiskZone::index(uint64_t h, uint64_t size, int64_t expires) {
  unindex(h);
  lru_.push_front({h, size, expires});
  index_[h] = lru_.begin();
  used_ += size;
}

void DiskZone::unindex(uint64_t h) {
  auto it = index_.find(h);
  if (it != index_.end()) {
    used_ -= it->second->size;
    lru_.erase(it->second);
    index_.erase(it);
  }
}

// Opens and checks one file: its head, its key and fields, its length. On success `out`
// holds the open descriptor.
bool DiskZone::read_file(const std::string& path, uint64_t h, Open* out, std::string* why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = std::strerror(errno);
    return false;
  }
  char raw[kFileHead];
  FileHead fh;
  struct stat st;
  std::string meta;
  bool ok = false;
  if (!pread_all(fd, raw, kFileHead, 0) || !fh.decode(raw)) {
    *why = "bad head";
  } else if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) !=
                                          kFileHead + fh.key_len + fh.head_len + fh.body_len) {
    *why = "wrong length";
  } else {
    meta.resize(fh.key_len + fh.head_len);
    std::string_view key(meta.data(), fh.key_len);
    std::string_view fields(meta.data() + fh.key_len, fh.head_len);
    if (!pread_all(fd, meta.data(), meta.size(), kFileHead) ||
        fh.meta_checksum(key, fields) != fh.meta_sum) {
      *why = "checksum mismatch in its head";
    } else if (key_hash(key) != h) {
      *why = "key does not match its name";
    } else if (!out->meta.load_head(fields)) {
      *why = "bad fields";
    } else {
      out->meta.key.assign(key);
      out->meta.status = static_cast<int>(fh.status);
      out->meta.created = fh.created;
      out->meta.ttl = fh.ttl;
      out->body_at = kFileHead + fh.key_len + fh.head_len;
      out->body_len = fh.body_len;
      out->body_sum = fh.body_sum;
      out->fd = fd;
      ok = true;
    }
  }
  if (!ok) {
    ::close(fd);
  }
  return ok;
}

DiskZone::Find DiskZone::open(const std::string& key, uint64_t h, Open* out) {
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(h);
    if (it == index_.end()) {
      return Find::kMiss;
    }
    lru_.splice(lru_.begin(), lru_, it->second);
  }
  std::string path = path_of(h);
  std::string why;
  if (!read_file(path, h, out, &why)) {
    broken(key, h, why.c_str());
    return Find::kMiss;
  }
  if (out->meta.key != key) {  // another key with the same hash: a miss, the file stays
    ::close(out->fd);
    out->fd = -1;
    return Find::kMiss;
  }
  return out->meta.expires() <= now_s() ? Find::kExpired : Find::kHit;
}

void DiskZone::broken(const std::string& key, uint64_t h, const char* why) {
  std::string path = path_of(h);
  SLUICE_LOG(kError,
             "proxy-cache: zone {}: cache file {} for key {} is corrupt ({}); removed, "
             "served from the upstream",
             conf_.name, path, key, why);
  ::unlink(path.c_str());
  std::lock_guard lock(mu_);
  unindex(h);
}

bool DiskZone::purge(const std::string& key, uint64_t h) {
  Open o;
  Find f = open(key, h, &o);
  if (f == Find::kMiss) {
    return false;
  }
  ::close(o.fd);
  ::unlink(path_of(h).c_str());
  std::lock_guard lock(mu_);
  unindex(h);
  return true;
}

bool DiskZone::fresh(uint64_t h) {
  std::lock_guard lock(mu_);
  auto it = index_.find(h);
  return it != index_.end() && it->second->expires > now_s();
}

void DiskZone::decline(uint64_t h) {
  constexpr size_t kMaxDeclined = 100000;
  std::lock_guard lock(mu_);
  if (declined_.size() >= kMaxDeclined) {
    declined_.clear();
  }
  declined_.insert(h);
}

bool DiskZone::declined(uint64_t h) {
  std::lock_guard lock(mu_);
  return declined_.count(h) != 0;
}

uint64_t DiskZone::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

size_t DiskZone::count() const {
  std::lock_guard lock(mu_);
  return index_.size();
}

bool DiskZone::Writer::start(DiskZone* z, const Entry& meta) {
  z_ = z;
  uint64_t seq;
  {
    std::lock_guard lock(z->mu_);
    seq = ++z->tmp_seq_;
  }
  tmp_ = fmt::format("{}/tmp/{}.{}", z->conf_.disk_path, ::getpid(), seq);
  fd_ = ::open(tmp_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    SLUICE_LOG(kError, "proxy-cache: zone {}: cannot create {}: {}; the response is not cached",
               z->conf_.name, tmp_, std::strerror(errno));
    return false;
  }
  key_ = meta.key;
  head_ = FileHead{};
  head_.key_len = static_cast<uint32_t>(meta.key.size());
  head_.head_len = static_cast<uint32_t>(meta.head.size());
  head_.created = meta.created;
  head_.ttl = meta.ttl;
  head_.status = static_cast<uint32_t>(meta.status);
  sum_ = Checksum();
  char raw[kFileHead] = {};
  if (!write_all(fd_, raw, kFileHead) || !write_all(fd_, meta.key.data(), meta.key.size()) ||
      !write_all(fd_, meta.head.data(), meta.head.size())) {
    SLUICE_LOG(kError, "proxy-cache: zone {}: cannot write {}: {}; the response is not cached",
               z->conf_.name, tmp_, std::strerror(errno));
    abort();
    return false;
  }
  return true;
}

bool DiskZone::Writer::write(std::string_view piece) {
  if (fd_ < 0) {
    return false;
  }
  uint64_t total = kFileHead + head_.key_len + head_.head_len + head_.body_len + piece.size();
  if (total > z_->conf_.disk_size) {
    SLUICE_LOG(kError,
               "proxy-cache: zone {}: response for key {} is over the zone's disk_size ({} "
               "bytes); not cached",
               z_->conf_.name, key_, z_->conf_.disk_size);
    abort();
    return false;
  }
  if (!write_all(fd_, piece.data(), piece.size())) {
    SLUICE_LOG(kError, "proxy-cache: zone {}: cannot write {}: {}; the response is not cached",
               z_->conf_.name, tmp_, std::strerror(errno));
    abort();
    return false;
  }
  sum_.add(piece);
  head_.body_len += piece.size();
  return true;
}

bool DiskZone::Writer::commit() {
  if (fd_ < 0) {
    return false;
  }
  std::string meta(head_.key_len + head_.head_len, '\0');
  head_.body_sum = sum_.value();
  bool ok = pread_all(fd_, meta.data(), meta.size(), kFileHead);
  head_.meta_sum =
      head_.meta_checksum(std::string_view(meta.data(), head_.key_len),
                          std::string_view(meta.data() + head_.key_len, head_.head_len));
  char raw[kFileHead];
  head_.encode(raw);
  ok = ok && ::pwrite(fd_, raw, kFileHead, 0) == static_cast<ssize_t>(kFileHead);
  ok = ::close(fd_) == 0 && ok;
  fd_ = -1;
  uint64_t h = key_hash(key_);
  std::string path = z_->path_of(h);
  if (ok) {
    make_dirs(path.substr(0, path.rfind('/')));
    ok = ::rename(tmp_.c_str(), path.c_str()) == 0;
  }
  if (!ok) {
    SLUICE_LOG(kError, "proxy-cache: zone {}: cannot store {}: {}; the response is not cached",
               z_->conf_.name, path, std::strerror(errno));
    ::unlink(tmp_.c_str());
    return false;
  }
  uint64_t size = kFileHead + head_.key_len + head_.head_len + head_.body_len;
  std::vector<uint64_t> evicted;
  {
    std::lock_guard lock(z_->mu_);
    z_->index(h, size, head_.created + head_.ttl);
    z_->declined_.erase(h);
    while (z_->used_ > z_->conf_.disk_size && z_->lru_.size() > 1) {
      uint64_t old = z_->lru_.back().h;
      z_->unindex(old);
      evicted.push_back(old);
    }
  }
  for (uint64_t old : evicted) {
    ::unlink(z_->path_of(old).c_str());
  }
  return true;
}

void DiskZone::Writer::abort() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
    fd_ = -1;
  }
}

}  // namespace sluice::plugins::proxy_cache
