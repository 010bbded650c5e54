#include "plugins/jwt_auth/config.h"

#include <array>
#include <vector>

#include "schema/checks.h"

namespace sluice::plugins::jwt_auth {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

StatusOr<std::string> non_empty(const Json& v) { return schema::as_string(v, 1); }
StatusOr<std::string> any_string(const Json& v) { return schema::as_string(v); }

StatusOr<uint8_t> claims_value(const Json& v) {
  auto names = schema::as_string_array(
      v,
      [](const Json& item) {
        return schema::as_enum(item, {"exp", "nbf"});
      },
      0);
  if (!names.is_ok()) {
    return names.status();
  }
  uint8_t bits = 0;
  for (const auto& n : *names) {
    bits |= n == "exp" ? kClaimExp : kClaimNbf;
  }
  return bits;
}

StatusOr<Alg> algorithm_value(const Json& v) {
  auto name = schema::as_enum(v, {"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256",
                                  "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA"});
  if (!name.is_ok()) {
    return name.status();
  }
  return *alg_from_name(*name);
}

// check_schema's own checks, after the schema's, in APISIX's order; then Sluice's: a field
// that the chosen algorithm would never use is refused rather than silently ignored.
Status finish_consumer(const FieldDecoder& d, const ConsumerConf& c) {
  const bool hs = is_hmac(c.algorithm);
  const std::string alg(alg_name(c.algorithm));
  if (hs && !d.has("secret")) {
    // APISIX generates a random secret and stores it with the consumer; Sluice cannot write
    // the conf back, and a secret nobody knows would refuse every token.
    return Status::error("missing valid secret: " + alg + " needs `secret`");
  }
  std::string decoded;
  if (hs && c.base64_secret && !base64_decode(c.secret, &decoded)) {
    return Status::error("base64_secret required but the secret is not in base64 format");
  }
  if (!hs && !d.has("public_key")) {
    return Status::error("missing valid public key");
  }
  if (hs && d.has("public_key")) {
    return Status::error("public_key is not used with algorithm " + alg + ": remove it");
  }
  if (!hs && (d.has("secret") || c.base64_secret)) {
    return Status::error("secret is not used with algorithm " + alg + ": remove it");
  }
  // The key itself: parsed now so that a bad one is refused when configured, not per request.
  auto key = Key::make(c.algorithm, hs ? c.hmac_key() : c.public_key);
  return key.is_ok() ? Status::ok() : key.status();
}

}  // namespace

bool base64_decode(std::string_view in, std::string* out) {
  // As nginx's ngx_decode_base64: the text ends at the first '=', whatever follows it.
  in = in.substr(0, in.find('='));
  if (in.size() % 4 == 1) {
    return false;
  }
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (v < 0) {
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

std::string ConsumerConf::hmac_key() const {
  if (!base64_secret) {
    return secret;
  }
  std::string out;
  base64_decode(secret, &out);
  return out;
}

StatusOr<RouteConf> parse_route(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  RouteConf c;
  FieldDecoder d(conf);
  d.unsupported("store_in_ctx",
                "store_in_ctx is not supported: no Sluice plugin reads the token's payload");
  d.only({"header", "query", "cookie", "hide_credentials", "key_claim_name", "anonymous_consumer",
          "claims_to_verify"});
  d.field("header", &c.header, any_string);
  d.field("query", &c.query, any_string);
  d.field("cookie", &c.cookie, any_string);
  d.field("hide_credentials", &c.hide_credentials, schema::as_bool);
  d.field("key_claim_name", &c.key_claim_name, non_empty);
  d.field("anonymous_consumer", &c.anonymous_consumer, non_empty);
  d.field("claims_to_verify", &c.claims, claims_value);
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

StatusOr<ConsumerConf> parse_consumer(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  ConsumerConf c;
  int64_t exp = 0;
  FieldDecoder d(conf);
  d.unsupported("private_key",
                "private_key is not supported: Sluice's jwt-auth verifies tokens and never "
                "signs them; keep the private key with the token issuer");
  // `exp` only ever set the lifetime of tokens APISIX's sign endpoint issued; it is checked
  // and kept for configurations copied from APISIX, which has it (default 86400) in every
  // consumer it stored.
  d.only({"key", "secret", "public_key", "algorithm", "exp", "base64_secret",
          "lifetime_grace_period"});
  d.field("key", &c.key, non_empty);
  d.field("secret", &c.secret, non_empty);
  d.field("public_key", &c.public_key, any_string);
  d.field("algorithm", &c.algorithm, algorithm_value);
  d.field("exp", &exp, [](const Json& v) { return schema::as_integer(v, 1, INT64_MAX); });
  d.field("base64_secret", &c.base64_secret, schema::as_bool);
  d.field("lifetime_grace_period", &c.lifetime_grace_period,
          [](const Json& v) { return schema::as_integer(v, 0, INT32_MAX); });
  d.require({"key"});
  if (!d.ok()) {
    return d.status();
  }
  if (Status s = finish_consumer(d, c); !s.is_ok()) {
    return s;
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  switch (use) {
    case plugin::PluginUse::kConsumer: {
      auto c = parse_consumer(conf);
      return c.is_ok() ? Status::ok() : c.status();
    }
    case plugin::PluginUse::kMetadata:
      return conf.empty() ? Status::ok() : Status::error("jwt-auth has no plugin metadata");
    default: {
      auto c = parse_route(conf);
      return c.is_ok() ? Status::ok() : c.status();
    }
  }
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "header": {"type": "string", "default": "authorization"},
    "query": {"type": "string", "default": "jwt"},
    "cookie": {"type": "string", "default": "jwt"},
    "hide_credentials": {"type": "boolean", "default": false},
    "key_claim_name": {"type": "string", "default": "key", "minLength": 1},
    "anonymous_consumer": {"type": "string", "minLength": 1},
    "claims_to_verify": {
      "type": "array",
      "items": {"type": "string", "enum": ["exp", "nbf"]},
      "uniqueItems": true,
      "default": ["exp", "nbf"]
    }
  },
  "additionalProperties": false
})JSON";

}  // namespace sluice::plugins::jwt_auth
