// jwt-auth's route and consumer confs: defaults, and the error texts (APISIX's where it has
// one; Sluice's own for fields that could not take effect).

#include "plugins/jwt_auth/config.h"

#include <gtest/gtest.h>

namespace sluice::plugins::jwt_auth {
namespace {

using plugin::Json;
using plugin::PluginUse;

std::string error_of(const char* conf, PluginUse use) {
  common::Status s = check(Json::parse(conf), use);
  return s.is_ok() ? "ok" : s.message();
}

TEST(JwtAuthConfig, RouteDefaults) {
  auto c = parse_route(Json::object());
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->header, "authorization");
  EXPECT_EQ(c->query, "jwt");
  EXPECT_EQ(c->cookie, "jwt");
  EXPECT_FALSE(c->hide_credentials);
  EXPECT_EQ(c->key_claim_name, "key");
  EXPECT_EQ(c->claims, kClaimExp | kClaimNbf);
  EXPECT_TRUE(c->anonymous_consumer.empty());
}

TEST(JwtAuthConfig, RouteErrors) {
  struct {
    const char* conf;
    const char* want;
  } cases[] = {
      {R"({"header": "x-jwt", "query": "t", "cookie": "c", "hide_credentials": true})", "ok"},
      {R"({"claims_to_verify": []})", "ok"},
      {R"({"claims_to_verify": ["exp"], "anonymous_consumer": "anon"})", "ok"},
      {R"({"header": 1})",
       R"(property "header" validation failed: wrong type: expected string, got number)"},
      {R"({"hide_credentials": "yes"})",
       R"(property "hide_credentials" validation failed: wrong type: expected boolean, got string)"},
      {R"({"claims_to_verify": ["iat"]})",
       R"(property "claims_to_verify" validation failed: failed to validate item 1: matches none of the enum values)"},
      {R"({"claims_to_verify": ["exp", "exp"]})",
       R"(property "claims_to_verify" validation failed: expected unique items but items 1 and 2 are equal)"},
      {R"({"key_claim_name": ""})",
       R"(property "key_claim_name" validation failed: string too short, expected at least 1, got 0)"},
      {R"({"store_in_ctx": true})",
       "store_in_ctx is not supported: no Sluice plugin reads the token's payload"},
      {R"({"foo": 1})", "additional properties forbidden, found foo"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(error_of(c.conf, PluginUse::kHttp), c.want) << c.conf;
  }
}

TEST(JwtAuthConfig, ConsumerErrors) {
  struct {
    const char* conf;
    const char* want;
  } cases[] = {
      {R"({"key": "user-key", "secret": "my-secret-key"})", "ok"},
      {R"({"key": "k", "secret": "s", "algorithm": "HS256", "exp": 86400, "base64_secret": false,
           "lifetime_grace_period": 0})",
       "ok"},
      {R"({"key": "k", "secret": "bXktc2VjcmV0", "base64_secret": true, "algorithm": "HS512"})",
       "ok"},
      {R"({"secret": "s"})", R"(property "key" is required)"},
      {R"({"key": ""})",
       R"(property "key" validation failed: string too short, expected at least 1, got 0)"},
      {R"({"key": "k", "secret": "s", "algorithm": "XS256"})",
       R"(property "algorithm" validation failed: matches none of the enum values)"},
      {R"({"key": "k", "secret": "s", "exp": 0})",
       R"(property "exp" validation failed: expected 0 to be at least 1)"},
      {R"({"key": "k", "secret": "s", "lifetime_grace_period": -1})",
       R"(property "lifetime_grace_period" validation failed: expected -1 to be at least 0)"},
      {R"({"key": "k", "secret": "not base64!", "base64_secret": true})",
       "base64_secret required but the secret is not in base64 format"},
      {R"({"key": "k", "algorithm": "RS256"})", "missing valid public key"},
      {R"({"key": "k", "algorithm": "ES256", "public_key": "junk"})",
       "invalid public_key: not a PEM public key (-----BEGIN PUBLIC KEY-----)"},
      {R"({"key": "k"})", "missing valid secret: HS256 needs `secret`"},
      {R"({"key": "k", "secret": "s", "public_key": "p"})",
       "public_key is not used with algorithm HS256: remove it"},
      {R"({"key": "k", "secret": "s", "private_key": "p"})",
       "private_key is not supported: Sluice's jwt-auth verifies tokens and never signs them; "
       "keep the private key with the token issuer"},
      {R"({"key": "k", "secret": "s", "vault": {}})",
       "additional properties forbidden, found vault"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(error_of(c.conf, PluginUse::kConsumer), c.want) << c.conf;
  }
}

TEST(JwtAuthConfig, Base64SecretIsDecoded) {
  auto c = parse_consumer(
      Json::parse(R"({"key": "k", "secret": "bXktc2VjcmV0", "base64_secret": true})"));
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->hmac_key(), "my-secret");
}

}  // namespace
}  // namespace sluice::plugins::jwt_auth
