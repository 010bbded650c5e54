#include "router/ip.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <cstring>
#include <string>

namespace sluice::router {

namespace {

constexpr size_t kMaxIpText = 64;

bool is_v4_mapped(const uint8_t* b) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(b, kPrefix, sizeof(kPrefix)) == 0;
}

// Clears every bit past prefix_len.
void mask_host_bits(IpAddr* ip, int prefix_len) {
  const int total = ip->v4 ? 4 : 16;
  for (int i = 0; i < total; ++i) {
    const int bits_left = prefix_len - i * 8;
    if (bits_left >= 8) {
      continue;
    }
    ip->bytes[i] &= bits_left <= 0 ? 0 : static_cast<uint8_t>(0xff << (8 - bits_left));
  }
}

}  // namespace

bool parse_ip(std::string_view text, IpAddr* out) {
  char buf[kMaxIpText];
  if (text.empty() || text.size() >= sizeof(buf)) {
    return false;
  }
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  IpAddr ip;
  if (text.find(':') == std::string_view::npos) {
    ip.v4 = true;
    if (inet_pton(AF_INET, buf, ip.bytes.data()) != 1) {
      return false;
    }
  } else {
    ip.v4 = false;
    if (inet_pton(AF_INET6, buf, ip.bytes.data()) != 1) {
      return false;
    }
  }
  *out = ip;
  return true;
}

IpAddr ip_from_sockaddr(const sockaddr* sa) {
  IpAddr ip;
  if (sa == nullptr) {
    return ip;
  }
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    std::memcpy(ip.bytes.data(), &in->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    const auto* b = reinterpret_cast<const uint8_t*>(&in6->sin6_addr);
    if (is_v4_mapped(b)) {
      std::memcpy(ip.bytes.data(), b + 12, 4);
    } else {
      ip.v4 = false;
      std::memcpy(ip.bytes.data(), b, 16);
    }
  }
  return ip;
}

bool Cidr::contains(const IpAddr& ip) const {
  if (ip.v4 != base.v4) {
    return false;
  }
  const int full = prefix_len / 8;
  if (std::memcmp(ip.bytes.data(), base.bytes.data(), full) != 0) {
    return false;
  }
  const int rest = prefix_len % 8;
  if (rest == 0) {
    return true;
  }
  const auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (ip.bytes[full] & mask) == base.bytes[full];
}

common::StatusOr<Cidr> parse_cidr(std::string_view text) {
  const size_t slash = text.find('/');
  Cidr cidr;
  if (!parse_ip(text.substr(0, slash), &cidr.base)) {
    return common::Status::error("invalid ip address: " + std::string(text));
  }
  const int max_len = cidr.base.v4 ? 32 : 128;
  cidr.prefix_len = max_len;
  if (slash != std::string_view::npos) {
    const std::string_view len = text.substr(slash + 1);
    int n = -1;
    auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), n);
    if (len.empty() || ec != std::errc() || end != len.data() + len.size() || n < 0 ||
        n > max_len) {
      return common::Status::error("invalid ip address: " + std::string(text));
    }
    cidr.prefix_len = n;
  }
  mask_host_bits(&cidr.base, cidr.prefix_len);
  return cidr;
}

}  // namespace sluice::router
