#include "plugins/proxy_cache/entry.h"

#include <cstring>
#include <ctime>

namespace sluice::plugins::proxy_cache {

int64_t now_s() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return ts.tv_sec;
}

void Entry::add_field(std::string_view name, std::string_view value) {
  head.append(name);
  head.push_back('\0');
  head.append(value);
  head.push_back('\0');
}

void Entry::freeze() {
  fields.clear();
  load_head(head);
}

bool Entry::load_head(std::string_view block) {
  if (block.data() != head.data()) {
    head.assign(block);
  }
  fields.clear();
  std::string_view rest = head;
  while (!rest.empty()) {
    size_t a = rest.find('\0');
    if (a == std::string_view::npos) {
      return false;
    }
    size_t b = rest.find('\0', a + 1);
    if (b == std::string_view::npos) {
      return false;
    }
    fields.push_back({rest.substr(0, a), rest.substr(a + 1, b - a - 1)});
    rest.remove_prefix(b + 1);
  }
  return true;
}

bool stored_field(std::string_view name) {
  if (http::is_hop_by_hop(name) || http::iequals(name, "content-length") ||
      http::iequals(name, "apisix-cache-status") || http::iequals(name, "age") ||
      http::iequals(name, "date") ||    // the hit's Date is the gateway's
      http::iequals(name, "server")) {  // and so is its Server, as on the miss that filled it
    return false;
  }
  // APISIX: not overwritable when the name matches "ratelimit-remaining".
  static constexpr std::string_view kRl = "ratelimit-remaining";
  for (size_t i = 0; i + kRl.size() <= name.size(); ++i) {
    if (http::iequals(name.substr(i, kRl.size()), kRl)) {
      return false;
    }
  }
  return true;
}

uint64_t key_hash(std::string_view key) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) {
    h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

void Checksum::add(std::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  total_ += n;
  while (n_ > 0 && n_ < 8 && n > 0) {
    tail_[n_++] = static_cast<unsigned char>(*p++);
    --n;
  }
  if (n_ == 8) {
    uint64_t w;
    std::memcpy(&w, tail_, 8);
    word(w);
    n_ = 0;
  }
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    word(w);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    tail_[n_++] = static_cast<unsigned char>(*p++);
    --n;
  }
}

uint64_t Checksum::value() const {
  uint64_t w = 0;
  std::memcpy(&w, tail_, n_);
  uint64_t h = (h_ ^ w ^ total_) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 31);
}

}  // namespace sluice::plugins::proxy_cache
