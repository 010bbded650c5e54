#pragma once
// jwt-auth's two confs, typed and checked with APISIX's schema and check_schema texts: the
// route side (where the token is looked for, what is checked of it) and the consumer side
// (the consumer's key, algorithm and secret or public key).

#include <cstdint>
#include <string>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/jwt_auth/jwt.h"

namespace sluice::plugins::jwt_auth {

// The route (or service, global rule ...) side.
// Thread: any (value type)
struct RouteConf {
  std::string header = "authorization";
  std::string query = "jwt";
  std::string cookie = "jwt";
  bool hide_credentials = false;
  std::string key_claim_name = "key";
  std::string anonymous_consumer;  // empty: none
  uint8_t claims = kClaimExp | kClaimNbf;
};

// One consumer's (or credential's) conf.
// Thread: any (value type)
struct ConsumerConf {
  std::string key;
  Alg algorithm = Alg::kHS256;
  std::string secret;      // HS*: as configured (base64 when base64_secret)
  std::string public_key;  // the others: PEM
  bool base64_secret = false;
  int64_t lifetime_grace_period = 0;
  // The secret to verify with: `secret`, base64-decoded when base64_secret.
  std::string hmac_key() const;
};

// Errors are the text after APISIX's `... plugin jwt-auth err: `, e.g.
// `property "header" validation failed: wrong type: expected string, got number`,
// `property "key" is required`, `missing valid public key`,
// `base64_secret required but the secret is not in base64 format`.
common::StatusOr<RouteConf> parse_route(const plugin::Json& conf);
common::StatusOr<ConsumerConf> parse_consumer(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// Standard base64 (ngx.decode_base64: '=' padding optional). False on a byte outside the
// alphabet or a length nginx refuses.
bool base64_decode(std::string_view in, std::string* out);

// The JSON schema served by GET /apisix/admin/plugins/jwt-auth (the route side).
extern const char kSchema[];

}  // namespace sluice::plugins::jwt_auth
