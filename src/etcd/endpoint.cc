#include "etcd/endpoint.h"

#include <fmt/format.h>

#include <charconv>

namespace sluice::etcd {

std::string Endpoint::authority() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

common::StatusOr<Endpoint> parse_endpoint(std::string_view url) {
  Endpoint e;
  e.url = std::string(url);
  std::string_view rest = url;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    e.tls = true;
    rest.remove_prefix(8);
  } else {
    return common::Status::error(fmt::format("{}: expected http:// or https://", url));
  }
  if (rest.ends_with('/')) {
    rest.remove_suffix(1);
  }
  std::string_view port;
  if (rest.starts_with('[')) {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return common::Status::error(fmt::format("{}: unclosed '[' in the host", url));
    }
    e.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty() && rest[0] != ':') {
      return common::Status::error(fmt::format("{}: unexpected text after the host", url));
    }
    port = rest.empty() ? std::string_view() : rest.substr(1);
  } else {
    size_t colon = rest.find(':');
    e.host = std::string(rest.substr(0, colon));
    port = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  if (e.host.empty() || e.host.find_first_of("/@?# ") != std::string::npos) {
    return common::Status::error(fmt::format("{}: expected scheme://host[:port]", url));
  }
  if (!port.empty() || rest.ends_with(':')) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || p != port.data() + port.size() || v == 0 || v > 65535) {
      return common::Status::error(fmt::format("{}: bad port", url));
    }
    e.port = static_cast<uint16_t>(v);
  }
  return e;
}

}  // namespace sluice::etcd
