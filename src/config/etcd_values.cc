#include "config/etcd_values.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string_view>

#include "config/field_decoder.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

constexpr const char* kUrlHint = "expected a URL http(s)://host[:port]";
constexpr size_t kMaxPrefix = 256;
constexpr size_t kMaxHostName = 253;
constexpr double kMaxTimeout = 3600;

bool host_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// Letters, digits, '-', '.' and '_'; a name of only digits and dots must be an IPv4 address.
bool valid_host_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxHostName ||
      !std::all_of(name.begin(), name.end(), host_name_char)) {
    return false;
  }
  bool numeric = std::all_of(name.begin(), name.end(), [](char c) {
    return c == '.' || std::isdigit(static_cast<unsigned char>(c));
  });
  unsigned char buf[sizeof(in_addr)];
  return !numeric || inet_pton(AF_INET, std::string(name).c_str(), buf) == 1;
}

bool valid_ipv6(std::string_view text) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET6, std::string(text).c_str(), buf) == 1;
}

// ":<port>" or nothing (the default port); 0 when it is neither.
int url_port(std::string_view s) {
  if (s.empty()) {
    return kEtcdDefaultPort;
  }
  int port = 0;
  s.remove_prefix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), port);
  bool ok = ec == std::errc() && end == s.data() + s.size() && port >= 1 && port <= 65535;
  return ok ? port : 0;
}

// Splits the authority of an http(s) URL ("host", "host:port", "[v6]:port") into `e`; false
// with `why` set when it is not one.
bool split_authority(std::string_view s, EtcdEndpoint* e, std::string* why) {
  if (s.find_first_of("/?#") != std::string_view::npos) {
    *why = "a path is not allowed";
    return false;
  }
  if (s.find('@') != std::string_view::npos) {
    *why = "user info is not allowed (use user and password)";
    return false;
  }
  std::string_view host = s.substr(0, s.find(':'));
  std::string_view rest = s.substr(host.size());
  bool v6 = !s.empty() && s.front() == '[';
  if (v6) {
    size_t close = s.find(']');
    host = close == std::string_view::npos ? s : s.substr(1, close - 1);
    rest = close == std::string_view::npos ? "" : s.substr(close + 1);
    if (close == std::string_view::npos || !valid_ipv6(host)) {
      *why = "invalid IPv6 address";
      return false;
    }
  } else if (std::count(s.begin(), s.end(), ':') > 1) {
    *why = "an IPv6 address must be in brackets";
    return false;
  } else if (host.empty()) {
    *why = "the host is missing";
    return false;
  } else if (!valid_host_name(host)) {
    *why = "invalid host name";
    return false;
  }
  if (!rest.empty() && rest.front() != ':') {
    *why = "invalid host";
    return false;
  }
  int port = url_port(rest);
  if (port == 0) {
    *why = "the port must be 1-65535";
    return false;
  }
  e->host = std::string(host);
  e->port = static_cast<uint16_t>(port);
  return true;
}

}  // namespace

std::string EtcdEndpoint::authority() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

StatusOr<EtcdEndpoint> parse_etcd_endpoint(std::string_view url) {
  EtcdEndpoint e;
  e.url = std::string(url);
  std::string_view s = url;
  e.tls = s.starts_with("https://");
  if (!e.tls && !s.starts_with("http://")) {
    return Status::error("the scheme must be http or https");
  }
  s.remove_prefix(e.tls ? 8 : 7);
  if (!s.empty() && s.back() == '/') {
    s.remove_suffix(1);
  }
  std::string why;
  if (!split_authority(s, &e, &why)) {
    return Status::error(why);
  }
  return e;
}

StatusOr<std::string> parse_etcd_url(const Json& v) {
  if (!v.is_string()) {
    return Status::error(fmt::format("{}, got {}", kUrlHint, json_text(v)));
  }
  auto e = parse_etcd_endpoint(v.get_ref<const std::string&>());
  if (!e) {
    return Status::error(
        fmt::format("{}, got {}: {}", kUrlHint, json_text(v), e.status().message()));
  }
  return fmt::format("{}://{}", e->tls ? "https" : "http", e->authority());
}

StatusOr<std::string> parse_etcd_prefix(const Json& v) {
  if (!v.is_string()) {
    return Status::error("expected a prefix such as \"/apisix\", got " + json_text(v));
  }
  std::string s = v.get<std::string>();
  if (s.empty() || s.front() != '/') {
    return Status::error("expected a prefix starting with '/', such as \"/apisix\", got " +
                         json_text(v));
  }
  if (s.size() > kMaxPrefix) {
    return Status::error(
        fmt::format("expected at most {} characters, got {}", kMaxPrefix, s.size()));
  }
  if (std::any_of(s.begin(), s.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; })) {
    return Status::error("expected no spaces or control characters, got " + json_text(v));
  }
  while (!s.empty() && s.back() == '/') {
    s.pop_back();
  }
  if (s.empty()) {
    return Status::error("expected a prefix below the root, such as \"/apisix\", got " +
                         json_text(v));
  }
  return s;
}

StatusOr<double> parse_etcd_timeout(const Json& v) {
  if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > kMaxTimeout) {
    return Status::error(
        fmt::format("expected a number > 0 and <= {}, got {}", kMaxTimeout, json_text(v)));
  }
  return v.get<double>();
}

Status both_or_neither(const Json& section, const char* a, const char* b) {
  auto given = [&section](const char* key) {
    return section.is_object() && section.contains(key) && !section[key].is_null();
  };
  if (given(a) == given(b)) {
    return Status::ok();
  }
  return Status::error(fmt::format("{} is set but {} is not; set both or neither", given(a) ? a : b,
                                   given(a) ? b : a));
}

StatusOr<std::string> parse_host_name(const Json& v) {
  if (!v.is_string() || !valid_host_name(v.get_ref<const std::string&>())) {
    return Status::error("expected a host name, got " + json_text(v));
  }
  return v.get<std::string>();
}

}  // namespace sluice::config
