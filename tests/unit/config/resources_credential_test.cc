// decode_credential (APISIX's `credential` schema and admin/credentials.lua's checks), the key
// layout of credentials, and the auth plugins' sealed fields on consumers and credentials.

#include <gtest/gtest.h>

#include "config/plugin_registry.h"
#include "config/resources.h"
#include "config/secret_fields.h"

namespace sluice::config {
namespace resources_credential_test {

using common::Status;

// key-auth stands for an auth plugin (none is built in yet); limit-count for any other.
Status needs_key(const Json& conf, PluginUse) {
  return conf.contains("key") ? Status::ok() : Status::error("property \"key\" is required");
}
const PluginInfo kRegistry[] = {
    {.name = "key-auth", .priority = 2500, .check = needs_key, .auth = true},
    {.name = "limit-count", .priority = 1002},
};

TEST(DecodeCredential, TakesApisixSchema) {
  auto c = decode_credential(Json::parse(R"({"id":"a","name":"n","desc":"d","labels":{"k":"v"},
      "plugins":{"key-auth":{"key":"the-key"}},"create_time":1,"update_time":2})"),
                             kRegistry);
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->id, "a");
  EXPECT_EQ(c->name, "n");
  EXPECT_EQ(c->desc, "d");
  EXPECT_EQ(c->labels.at("k"), "v");
  EXPECT_EQ(c->plugins["key-auth"]["key"], "the-key");
  EXPECT_EQ(c->update_time, 2);
  // Everything is optional, plugins included (APISIX's schema requires nothing).
  EXPECT_TRUE(decode_credential(Json::object(), kRegistry).is_ok());
  EXPECT_TRUE(decode_credential(Json{{"plugins", Json::object()}}, kRegistry).is_ok());
}

TEST(DecodeCredential, ErrorsAsApisixWordsThem) {
  struct Case {
    const char* body;
    const char* error;
  };
  const Case cases[] = {
      {R"({"username":"jack"})",
       "invalid configuration: additional properties forbidden, found username"},
      {R"({"plugins":{"key-auth":{"key":"a"},"limit-count":{}}})",
       R"(invalid configuration: property "plugins" validation failed: expect object to have )"
       "at most 1 properties"},
      {R"({"plugins":{"limit-count":{}}})",
       "only supports auth type plugins in consumer credential"},
      {R"({"plugins":{"basic-auth":{}}})",
       "invalid plugins configuration: unknown plugin [basic-auth]"},
      {R"({"plugins":{"key-auth":{}}})",
       "invalid plugins configuration: failed to check the configuration of plugin key-auth "
       "err: property \"key\" is required"},
      // APISIX's id_schema is anyOf string-pattern / integer.
      {R"({"id":"a b"})",
       R"(invalid configuration: property "id" validation failed: object matches none of the )"
       "required"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    auto r = decode_credential(Json::parse(c.body), kRegistry);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), c.error);
  }
}

TEST(CredentialId, SplitsTheConsumersKeyPart) {
  std::string_view user, id;
  ASSERT_TRUE(split_credential_id("jack/credentials/a", &user, &id));
  EXPECT_EQ(user, "jack");
  EXPECT_EQ(id, "a");
  EXPECT_EQ(credential_id("jack", "a"), "jack/credentials/a");
  for (const char* bad : {"jack", "jack/credentials/", "/credentials/a", "jack/credentials/a/b",
                          "x/jack/credentials/a", "jack/credential/a"}) {
    EXPECT_FALSE(split_credential_id(bad, &user, &id)) << bad;
  }
}

// Each test starts from, and leaves, the process's default apisix.data_encryption.
class PluginSecrets : public ::testing::Test {
 protected:
  void TearDown() override { set_data_encryption(DataEncryptionConfig{}); }
};

// "the-key" sealed by `openssl enc -aes-128-cbc` under each default key (as key and IV), as
// APISIX's data_encryption writes it.
constexpr const char* kSealedFirst = "JCX7x1qN5e9kHt0GuJfWpw==";
constexpr const char* kSealedSecond = "kD7jSfx03nwOd30y3ffW1A==";

TEST_F(PluginSecrets, SealsTheAuthPluginsEncryptFields) {
  for (const char* kind : {"consumers", "credentials"}) {
    SCOPED_TRACE(kind);
    Json obj = Json::parse(R"({"plugins":{
        "key-auth":{"key":"the-key","header":"apikey"},
        "basic-auth":{"username":"u","password":"the-key"},
        "jwt-auth":{"key":"k","secret":"the-key","private_key":"the-key"},
        "hmac-auth":{"key_id":"k","secret_key":"the-key"}}})");
    ASSERT_TRUE(seal_secrets(kind, &obj));
    const Json& p = obj["plugins"];
    for (const Json* v :
         {&p["key-auth"]["key"], &p["basic-auth"]["password"], &p["jwt-auth"]["secret"],
          &p["jwt-auth"]["private_key"], &p["hmac-auth"]["secret_key"]}) {
      EXPECT_EQ(*v, kSealedFirst);
    }
    // Only the encrypt_fields: names and ids stay readable.
    EXPECT_EQ(p["key-auth"]["header"], "apikey");
    EXPECT_EQ(p["basic-auth"]["username"], "u");
    EXPECT_EQ(p["jwt-auth"]["key"], "k");
    EXPECT_EQ(p["hmac-auth"]["key_id"], "k");
    ASSERT_TRUE(reveal_secrets(kind, &obj));
    EXPECT_EQ(obj["plugins"]["hmac-auth"]["secret_key"], "the-key");
    EXPECT_EQ(obj["plugins"]["key-auth"]["key"], "the-key");
  }
}

TEST_F(PluginSecrets, ReferencesAndOtherKindsAreNeverSealed) {
  Json obj = Json::parse(R"({"plugins":{"key-auth":{"key":"$secret://vault/1/jack/key"},
      "basic-auth":{"password":"$env://PASS"}}})");
  Json before = obj;
  ASSERT_TRUE(seal_secrets("consumers", &obj));
  EXPECT_EQ(obj, before);
  Json route = Json::parse(R"({"plugins":{"key-auth":{"key":"k"}}})");
  before = route;
  ASSERT_TRUE(seal_secrets("routes", &route));
  EXPECT_EQ(route, before);
}

TEST_F(PluginSecrets, TheGateIsEnableEncryptFieldsAndAKeyring) {
  DataEncryptionConfig off;
  off.enable_encrypt_fields = false;
  set_data_encryption(off);
  Json obj = Json::parse(R"({"plugins":{"key-auth":{"key":"the-key"}}})");
  ASSERT_TRUE(seal_secrets("credentials", &obj));
  EXPECT_EQ(obj["plugins"]["key-auth"]["key"], "the-key");
  // Held in clear with the gate shut: answered as APISIX answers it, not left out.
  EXPECT_EQ(omit_clear_secrets("credentials", &obj), 0u);
  EXPECT_EQ(obj["plugins"]["key-auth"]["key"], "the-key");
  // Nor read as sealed: a value is taken as written.
  obj["plugins"]["key-auth"]["key"] = kSealedFirst;
  ASSERT_TRUE(reveal_secrets("credentials", &obj));
  EXPECT_EQ(obj["plugins"]["key-auth"]["key"], kSealedFirst);

  DataEncryptionConfig no_keyring;
  no_keyring.keyring.clear();
  set_data_encryption(no_keyring);
  obj["plugins"]["key-auth"]["key"] = "the-key";
  ASSERT_TRUE(seal_secrets("consumers", &obj));
  EXPECT_EQ(obj["plugins"]["key-auth"]["key"], "the-key");
}

TEST_F(PluginSecrets, RevealsWithEveryKeyAndKeepsWhatNoKeyOpens) {
  Json obj = Json::parse(R"({"plugins":{"key-auth":{"key":""}}})");
  Json& key = obj["plugins"]["key-auth"]["key"];
  // Sealed by an APISIX node whose keyring has the second default key first.
  key = kSealedSecond;
  ASSERT_TRUE(reveal_secrets("consumers", &obj));
  EXPECT_EQ(key, "the-key");
  // Written in clear before encryption was on, or not base64 at all: APISIX logs the failure
  // and uses the value as it is; so does Sluice.
  for (const char* clear : {"the-key", "abcdefghijklmnopqrstuv==", "not base64!", ""}) {
    key = clear;
    ASSERT_TRUE(reveal_secrets("consumers", &obj));
    EXPECT_EQ(key, clear);
  }
}

}  // namespace resources_credential_test
}  // namespace sluice::config
