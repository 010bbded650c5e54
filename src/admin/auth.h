#pragma once
// Who may use the Admin API: the allow_admin address blocks, then the key (X-API-KEY header,
// ?api_key= or the x_api_key cookie) and its role. The well-known APISIX 2.x key is honoured
// from loopback clients only.

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/gateway_config.h"
#include "router/ip.h"
#include "server/admin_hook.h"

namespace sluice::admin {

// Thread: control (immutable after construction)
class Auth {
 public:
  static common::StatusOr<Auth> create(const config::AdminConfig& conf);

  // nullopt when `req` may proceed; otherwise the 401/403 answer to send. `*who` is set to
  // the key the request presented when it matched one (null when none did or none is needed).
  std::optional<server::AdminResponse> check(const server::AdminRequest& req,
                                             const config::AdminKey** who = nullptr) const;

 private:
  std::vector<router::Cidr> allow_;
  std::vector<config::AdminKey> keys_;
  bool key_required_ = true;
};

// Compares two keys in time that depends only on their lengths.
bool keys_equal(std::string_view a, std::string_view b);
// The value of `name` in a query string (not percent-decoded), or nullopt.
std::optional<std::string_view> query_param(std::string_view query, std::string_view name);
bool is_loopback(const router::IpAddr& ip);

}  // namespace sluice::admin
