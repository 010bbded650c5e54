#pragma once
// Checks shared by the config fuzz targets: what every decoded resource and every error must
// satisfy, and building a snapshot from a decoded set the way the control plane does.

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/resources.h"
#include "config/snapshot_builder.h"
#include "fuzz/fuzz_check.h"
#include "http/message.h"
#include "router/route_table.h"
#include "router/text.h"
#include "upstream/resolver.h"

namespace sluice::fuzz {

// An error a user (or, through the Admin API, a client) reads: not empty, no library exception
// text, and printable as a JSON string (nlohmann::json::dump() throws on invalid UTF-8).
// `input` is the fuzz input the error came from; `json_reply`: the error may be sent back in a
// JSON body (Admin API), not only logged (config files), so it must be valid UTF-8.
inline void check_error_text(const std::string& msg, std::string_view input, bool json_reply) {
  FUZZ_CHECK(!msg.empty());
  // Library text shows as nlohmann's "[json.exception.<kind>]" prefix; an input may spell it
  // itself (the message quotes the input), which is no leak.
  FUZZ_CHECK(msg.find("[json.exception.") == std::string::npos ||
             input.find("json.exception") != std::string_view::npos);
  if (!json_reply) {
    return;
  }
  bool dumps = true;
  try {
    (void)nlohmann::json(msg).dump();
  } catch (const nlohmann::json::exception&) {
    dumps = false;
  }
  FUZZ_CHECK(dumps);
}

// An id as given (valid_id), or the one apisix.yaml gives an item without one: `<kind>#<n>`,
// n counting from 1, as APISIX does.
inline bool id_ok(const std::string& id, std::string_view kind) {
  if (id.empty() || config::valid_id(id)) {
    return true;
  }
  std::string prefix = std::string(kind) + "#";
  if (!id.starts_with(prefix) || id.size() == prefix.size() || id[prefix.size()] == '0') {
    return false;
  }
  return id.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

inline void check_upstream(const config::UpstreamConf& u) {
  FUZZ_CHECK(id_ok(u.id, "upstreams"));
  for (const config::UpstreamNodeConf& n : u.nodes) {
    FUZZ_CHECK(!n.host.empty() && n.port != 0 && n.weight >= 0);
  }
  FUZZ_CHECK(!u.retries || *u.retries >= 0);
  FUZZ_CHECK(u.retry_timeout >= 0);
  if (u.timeout) {
    FUZZ_CHECK(u.timeout->connect > 0 && u.timeout->send > 0 && u.timeout->read > 0);
  }
  FUZZ_CHECK(u.keepalive_pool.size >= 1 && u.keepalive_pool.requests >= 1 &&
             u.keepalive_pool.idle_timeout >= 0);
  FUZZ_CHECK(u.pass_host != config::PassHost::kRewrite || !u.upstream_host.empty());
  FUZZ_CHECK(u.scheme == "http" || u.scheme == "https" || u.scheme == "grpc" ||
             u.scheme == "grpcs");
}

// A route the decoder accepts must not be refused by the router for its uris or hosts.
inline void check_routable(const std::vector<std::string>& uris,
                           const std::vector<std::string>& hosts) {
  router::RouteSpec spec;
  spec.uris = uris;
  spec.hosts = hosts;
  std::vector<router::RouteSpec> specs;
  specs.push_back(std::move(spec));
  auto table = router::RouteTable::build(std::move(specs));
  if (!table.is_ok()) {
    std::fprintf(stderr, "decoded route refused by the router: %s\n",
                 table.status().message().c_str());
  }
  FUZZ_CHECK(table.is_ok());
}

inline void check_route(const config::RouteConf& r) {
  FUZZ_CHECK(id_ok(r.id, "routes"));
  FUZZ_CHECK(!r.uris.empty());
  for (const std::string& uri : r.uris) {
    FUZZ_CHECK(!uri.empty() && uri[0] == '/');
  }
  for (const std::string& m : r.methods) {
    FUZZ_CHECK(http::parse_method(m) != http::Method::kOther);
  }
  FUZZ_CHECK(r.status == 0 || r.status == 1);
  FUZZ_CHECK(r.plugins.is_null() || r.plugins.is_object());
  if (r.upstream) {
    check_upstream(*r.upstream);
  }
  if (r.timeout) {
    FUZZ_CHECK(r.timeout->connect > 0 && r.timeout->send > 0 && r.timeout->read > 0);
  }
  check_routable(r.uris, r.hosts);
}

inline void check_service(const config::ServiceConf& s) {
  FUZZ_CHECK(id_ok(s.id, "services"));
  if (s.upstream) {
    check_upstream(*s.upstream);
  }
  if (!s.hosts.empty()) {
    check_routable({"/"}, s.hosts);
  }
}

// Node hosts that are not IP literals become 127.0.0.1: the builder would resolve them with
// blocking DNS, which a fuzzer must not wait for.
inline void literal_hosts(config::UpstreamConf* u) {
  for (config::UpstreamNodeConf& n : u->nodes) {
    if (!upstream::is_ip_literal(n.host)) {
      n.host = "127.0.0.1";
    }
  }
}

// Builds a snapshot from `set` as the control plane does; errors (vars, CIDRs) are allowed,
// crashes and undefined behaviour are not.
inline void check_build(config::ConfigSet set, std::string_view input, bool json_reply) {
  for (auto& r : set.routes) {
    if (r.upstream) {
      literal_hosts(&*r.upstream);
    }
  }
  for (auto& s : set.services) {
    if (s.upstream) {
      literal_hosts(&*s.upstream);
    }
  }
  for (auto& u : set.upstreams) {
    literal_hosts(&u);
  }
  upstream::DnsCache dns(30);
  auto built = config::build_snapshot(set, dns, 1);
  if (!built.is_ok()) {
    check_error_text(built.status().message(), input, json_reply);
    return;
  }
  FUZZ_CHECK(built->snapshot != nullptr);
  size_t enabled = 0;
  for (const auto& r : set.routes) {
    enabled += r.status == 1 ? 1 : 0;
  }
  FUZZ_CHECK(built->snapshot->routes.size() == enabled);
  FUZZ_CHECK(built->snapshot->table.size() == enabled);
}

}  // namespace sluice::fuzz
