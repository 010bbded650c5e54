#include "config/upstream_nodes.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <string_view>

#include "config/field_decoder.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

struct HostPort {
  std::string host;
  uint16_t port = 0;  // 0 = not given
};

std::optional<uint16_t> parse_port(std::string_view s) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value < 1 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

// "host", "host:port", "[v6]", "[v6]:port" or a bare IPv6 literal, as APISIX's parse_addr.
std::optional<HostPort> parse_address(std::string_view addr) {
  HostPort hp;
  if (!addr.empty() && addr.front() == '[') {
    size_t close = addr.find(']');
    if (close == std::string_view::npos || close == 1) {
      return std::nullopt;
    }
    hp.host = std::string(addr.substr(1, close - 1));
    std::string_view rest = addr.substr(close + 1);
    if (rest.empty()) {
      return hp;
    }
    auto port = rest.front() == ':' ? parse_port(rest.substr(1)) : std::nullopt;
    if (!port) {
      return std::nullopt;
    }
    hp.port = *port;
    return hp;
  }
  size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos || addr.find(':') != colon) {
    hp.host = std::string(addr);  // a name, IPv4, or a bare IPv6 literal without a port
  } else {
    auto port = parse_port(addr.substr(colon + 1));
    if (!port) {
      return std::nullopt;
    }
    hp.host = std::string(addr.substr(0, colon));
    hp.port = *port;
  }
  if (hp.host.empty() || !as_host(Json(hp.host)).is_ok() || hp.host.front() == '*') {
    return std::nullopt;
  }
  return hp;
}

StatusOr<std::vector<UpstreamNodeConf>> decode_node_map(const Json& v) {
  std::vector<UpstreamNodeConf> nodes;
  for (const auto& [key, value] : v.items()) {
    auto weight = as_integer(value, 0);
    auto addr = parse_address(key);
    if (weight.is_ok() && !addr) {
      weight = Status::error(fmt::format("invalid node address \"{}\" (expected host:port)", key));
    }
    if (!weight.is_ok()) {
      return Status::error(fmt::format("failed to validate {} (matching \".*\"): {}", key,
                                       weight.status().message()));
    }
    nodes.push_back({addr->host, addr->port, static_cast<int>(*weight), 0});
  }
  return nodes;
}

StatusOr<UpstreamNodeConf> decode_node_object(const Json& v) {
  UpstreamNodeConf node;
  node.port = 0;
  FieldDecoder d(v);
  Json metadata;
  d.only({"host", "port", "weight", "priority", "metadata"});
  d.field("host", &node.host, as_host);
  d.field("port", &node.port, [](const Json& x) { return as_integer(x, 1, 65535); });
  d.field("weight", &node.weight, [](const Json& x) { return as_integer(x, 0); });
  d.field("priority", &node.priority, [](const Json& x) { return as_integer(x); });
  d.field("metadata", &metadata, as_object);
  for (const char* name : {"host", "weight"}) {
    if (!d.has(name)) {
      d.fail(fmt::format("property \"{}\" is required", name));
    }
  }
  if (!d.ok()) {
    return d.status();
  }
  if (node.host.size() > 2 && node.host.front() == '[' && node.host.back() == ']') {
    node.host = node.host.substr(1, node.host.size() - 2);
  }
  return node;
}

StatusOr<std::vector<UpstreamNodeConf>> decode_node_array(const Json& v) {
  std::vector<UpstreamNodeConf> nodes;
  for (size_t i = 0; i < v.size(); ++i) {
    auto node = decode_node_object(v[i]);
    if (!node.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, node.status().message()));
    }
    nodes.push_back(std::move(node).value());
  }
  return nodes;
}

}  // namespace

// APISIX's `nodes` schema is anyOf {object of weights, array of node objects}, so whatever is
// wrong its jsonschema says only "object matches none of the required"; that text comes first
// (scripts match on it) and what is wrong follows in parentheses.
StatusOr<std::vector<UpstreamNodeConf>> decode_upstream_nodes(const Json& v) {
  StatusOr<std::vector<UpstreamNodeConf>> nodes =
      v.is_object()  ? decode_node_map(v)
      : v.is_array() ? decode_node_array(v)
                     : StatusOr<std::vector<UpstreamNodeConf>>(wrong_type("object or array", v));
  if (!nodes.is_ok()) {
    return Status::error(
        fmt::format("object matches none of the required ({})", nodes.status().message()));
  }
  return nodes;
}

void fill_default_ports(std::vector<UpstreamNodeConf>* nodes, const std::string& scheme) {
  uint16_t port = scheme == "https" || scheme == "grpcs" ? 443 : 80;
  for (auto& node : *nodes) {
    if (node.port == 0) {
      node.port = port;
    }
  }
}

}  // namespace sluice::config
