#include "config/gateway_values.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>

#include "config/field_decoder.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

constexpr const char* kDurationHint =
    "expected a duration such as 60, \"60s\", \"500ms\" or \"1m\"";
constexpr const char* kSizeHint =
    "expected a size such as 0, \"1024\", \"512k\", \"10m\" or \"1g\"";

struct TimeUnit {
  std::string_view name;
  double seconds;
};
constexpr TimeUnit kTimeUnits[] = {{"ms", 0.001},     {"s", 1},          {"m", 60},
                                   {"h", 3600},       {"d", 86400},      {"w", 7 * 86400},
                                   {"M", 30 * 86400}, {"y", 365 * 86400}};

// Seconds per nginx time unit; 0 when `unit` is not one.
double unit_seconds(std::string_view unit) {
  for (const auto& u : kTimeUnits) {
    if (u.name == unit) {
      return u.seconds;
    }
  }
  return 0;
}

// Reads the digits at the front of `s` into `*out`; false when there are none.
bool take_number(std::string_view* s, uint64_t* out) {
  auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), *out);
  if (ec != std::errc() || end == s->data()) {
    return false;
  }
  s->remove_prefix(end - s->data());
  return true;
}

std::optional<double> parse_duration_text(std::string_view s) {
  if (s.empty()) {
    return std::nullopt;
  }
  double total = 0;
  while (!s.empty()) {
    uint64_t n = 0;
    if (!take_number(&s, &n)) {
      return std::nullopt;
    }
    size_t unit_len = 0;
    while (unit_len < s.size() && std::isalpha(static_cast<unsigned char>(s[unit_len]))) {
      ++unit_len;
    }
    double scale = unit_len == 0 ? 1 : unit_seconds(s.substr(0, unit_len));
    if (scale == 0 || (unit_len == 0 && !s.empty())) {
      return std::nullopt;
    }
    total += static_cast<double>(n) * scale;
    s.remove_prefix(unit_len);
    while (!s.empty() && s.front() == ' ') {
      s.remove_prefix(1);  // nginx allows "1m 30s"
    }
  }
  return total;
}

}  // namespace

StatusOr<double> parse_duration(const Json& v) {
  if (v.is_number()) {
    double d = v.get<double>();
    if (!(d >= 0)) {
      return Status::error(kDurationHint);
    }
    return d;
  }
  if (!v.is_string()) {
    return Status::error(fmt::format("{}, got {}", kDurationHint, json_type_name(v)));
  }
  auto d = parse_duration_text(v.get_ref<const std::string&>());
  if (!d) {
    return Status::error(fmt::format("{}, got \"{}\"", kDurationHint, v.get<std::string>()));
  }
  return *d;
}

StatusOr<uint64_t> parse_size(const Json& v) {
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    return v.get<uint64_t>();
  }
  if (!v.is_string()) {
    return Status::error(fmt::format("{}, got {}", kSizeHint, json_type_name(v)));
  }
  std::string_view s = v.get_ref<const std::string&>();
  uint64_t n = 0;
  uint64_t scale = 1;
  bool ok = take_number(&s, &n);
  if (ok && s.size() == 1) {
    char u = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
    scale = u == 'k' ? 1ull << 10 : u == 'm' ? 1ull << 20 : u == 'g' ? 1ull << 30 : 0;
    s.remove_prefix(1);
  }
  if (!ok || !s.empty() || scale == 0 || n > UINT64_MAX / scale) {
    return Status::error(fmt::format("{}, got \"{}\"", kSizeHint, v.get<std::string>()));
  }
  return n * scale;
}

StatusOr<std::string> parse_ip(const Json& v) {
  if (!v.is_string()) {
    return Status::error("expected an IP address, got " + json_type_name(v));
  }
  std::string ip = v.get<std::string>();
  if (ip.size() > 2 && ip.front() == '[' && ip.back() == ']') {
    ip = ip.substr(1, ip.size() - 2);
  }
  unsigned char buf[sizeof(in6_addr)];
  if (inet_pton(AF_INET, ip.c_str(), buf) != 1 && inet_pton(AF_INET6, ip.c_str(), buf) != 1) {
    return Status::error(fmt::format("expected an IP address, got \"{}\"", v.get<std::string>()));
  }
  return ip;
}

}  // namespace sluice::config
