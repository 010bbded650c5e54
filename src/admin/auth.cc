#include "admin/auth.h"

#include <fmt/format.h>

namespace sluice::admin {

using common::Status;
using common::StatusOr;

namespace {

// APISIX's reason ("missing apikey") and then how to pass a key and where the keys live:
// APISIX's getting-started runs without a key, Sluice never does. The key itself is never
// written here, not even the well-known default: a 401 must not hand out a working key.
std::string key_hint(std::string_view why) {
  return fmt::format(
      "{}: send an admin key in the X-API-KEY header (or as ?api_key=); the keys are "
      "deployment.admin.admin_key in conf/config.yaml, where the shipped file has APISIX's "
      "well-known default key (accepted from loopback clients only)",
      why);
}

server::AdminResponse token_error(std::string_view why) {
  server::AdminResponse r;
  r.status = 401;
  r.body = fmt::format("{{\"error_msg\":\"failed to check token\",\"description\":\"{}\"}}\n", why);
  r.headers.emplace_back("X-API-VERSION", "v3");
  return r;
}

std::string_view header(const server::AdminRequest& req, std::string_view name) {
  for (const auto& [n, v] : req.headers) {
    if (n == name) {
      return v;
    }
  }
  return {};
}

// The x_api_key cookie from a Cookie header ("a=1; x_api_key=abc").
std::optional<std::string_view> cookie_key(std::string_view cookies) {
  while (!cookies.empty()) {
    size_t semi = cookies.find(';');
    std::string_view item = cookies.substr(0, semi);
    while (!item.empty() && item.front() == ' ') {
      item.remove_prefix(1);
    }
    size_t eq = item.find('=');
    if (eq != std::string_view::npos && item.substr(0, eq) == "x_api_key") {
      return item.substr(eq + 1);
    }
    if (semi == std::string_view::npos) {
      break;
    }
    cookies.remove_prefix(semi + 1);
  }
  return std::nullopt;
}

}  // namespace

bool keys_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

std::optional<std::string_view> query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view item = query.substr(0, amp);
    size_t eq = item.find('=');
    std::string_view k = item.substr(0, eq);
    if (k == name) {
      return eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    }
    if (amp == std::string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

bool is_loopback(const router::IpAddr& ip) {
  if (ip.v4) {
    return ip.bytes[0] == 127;
  }
  for (int i = 0; i < 15; ++i) {
    if (ip.bytes[i] != 0) {
      return false;
    }
  }
  return ip.bytes[15] == 1;
}

StatusOr<Auth> Auth::create(const config::AdminConfig& conf) {
  Auth a;
  for (size_t i = 0; i < conf.allow.size(); ++i) {
    auto c = router::parse_cidr(conf.allow[i]);
    if (!c) {
      return Status::error(fmt::format("config.yaml: deployment.admin.allow_admin[{}]: {}", i,
                                       c.status().message()));
    }
    a.allow_.push_back(*c);
  }
  a.keys_ = conf.keys;
  a.key_required_ = conf.key_required;
  return a;
}

std::optional<server::AdminResponse> Auth::check(const server::AdminRequest& req,
                                                 const config::AdminKey** who) const {
  bool allowed = false;
  for (const auto& c : allow_) {
    allowed = allowed || c.contains(req.peer);
  }
  if (!allowed) {
    server::AdminResponse r;
    r.status = 403;
    r.body = "{\"error_msg\":\"403 Forbidden: client address not in allow_admin\"}\n";
    r.headers.emplace_back("X-API-VERSION", "v3");
    return r;
  }
  if (!key_required_) {
    return std::nullopt;
  }
  std::optional<std::string_view> given;
  if (std::string_view h = header(req, "x-api-key"); !h.empty()) {
    given = h;
  } else if (auto q = query_param(req.query, "api_key")) {
    given = q;
  } else if (auto c = cookie_key(header(req, "cookie"))) {
    given = c;
  }
  if (!given || given->empty()) {
    return token_error(key_hint("missing apikey"));
  }
  const config::AdminKey* match = nullptr;
  for (const auto& k : keys_) {
    if (keys_equal(k.key, *given) && match == nullptr) {
      match = &k;
    }
  }
  if (match == nullptr) {
    return token_error(key_hint("wrong apikey"));
  }
  if (who != nullptr) {
    *who = match;
  }
  if (match->key == config::kWellKnownAdminKey && !is_loopback(req.peer)) {
    return token_error("the default admin key is accepted from loopback clients only");
  }
  if (match->role == config::AdminRole::kViewer && req.method != "GET") {
    return token_error("invalid method for role viewer");
  }
  return std::nullopt;
}

}  // namespace sluice::admin
