#include "config/secret_fields.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/resources.h"
#include "config/validate.h"

namespace sluice::config {
namespace secret_fields_test {

std::string fixture(const char* name) {
  auto path = std::filesystem::path(__FILE__).parent_path() / "testdata" / name;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << path;
  return ss.str();
}

// testdata/key.pem sealed by `openssl enc -aes-128-cbc` under the second default key
// (edd1c9f0985e76a2 as key and IV), as an APISIX node with the default keyring reads it.
constexpr const char* kKeyPemSealed =
    "YnwwDKc5vNzo0OU4StTRQf9du0E4nyUPcmo7GB3Z2BDQb+vbvIfJx5GZcGygWXfj45PUgxcy5F7EnKvAvvzKuAJemWtt"
    "8URpEVpXV6T56afzccKhV2m5cxQJLeQyrdGr87yKxxuKRj/6BE7fTLcn8CW4KbMtqj2DAGz0TwO+y6r2FbY8jtYyxVtC"
    "rIKu2y8coAnNUN+vhpgOaC+P1RfcswI/9N2GLco7f+U2mcNBJ9Z36fJpuxfpsN93Jd/csQXD44HB460YKpkpSPqDiAPG"
    "kt0aa2p5sRu9zVMYNL4zNLKwee42mjFNaneds2xld4mNWnMS3xPWncGEmuexc/K5KA==";

// Each test starts from, and leaves, the process's default settings.
class SecretFields : public ::testing::Test {
 protected:
  void TearDown() override { set_data_encryption(DataEncryptionConfig{}); }

  static void use_keyring(std::vector<std::string> keys) {
    DataEncryptionConfig c;
    c.keyring = std::move(keys);
    set_data_encryption(c);
  }

  // An ssl with the test certificate twice: `key` and `keys[0]` are testdata/key.pem.
  static Json ssl() {
    return Json{{"id", "1"},
                {"cert", fixture("cert.pem")},
                {"key", fixture("key.pem")},
                {"snis", {"test.example"}},
                {"certs", {fixture("cert.pem")}},
                {"keys", {fixture("key.pem")}}};
  }
};

TEST_F(SecretFields, SealsSslKeysWithTheFirstKey) {
  Json obj = ssl();
  ASSERT_TRUE(seal_secrets("ssls", &obj));
  EXPECT_EQ(obj["key"], keyring().encrypt(fixture("key.pem")).value());
  EXPECT_EQ(obj["keys"][0], obj["key"]);
  EXPECT_EQ(obj["cert"], fixture("cert.pem"));  // certificates are public
  EXPECT_EQ(obj.dump().find("PRIVATE KEY"), std::string::npos);
}

TEST_F(SecretFields, NeverSealsTwice) {
  Json obj = ssl();
  ASSERT_TRUE(seal_secrets("ssls", &obj));
  Json again = obj;
  ASSERT_TRUE(seal_secrets("ssls", &again));
  EXPECT_EQ(again, obj);
}

TEST_F(SecretFields, ReferencesAndOtherKindsAreLeft) {
  Json obj = ssl();
  obj["key"] = "$secret://vault/1/ssl/key";
  obj["keys"][0] = "$env://SSL_KEY";
  Json want = obj;
  ASSERT_TRUE(seal_secrets("ssls", &obj));
  EXPECT_EQ(obj, want);
  Json route = {{"uri", "/a"}, {"key", "-----BEGIN x"}};
  ASSERT_TRUE(seal_secrets("routes", &route));
  EXPECT_EQ(route["key"], "-----BEGIN x");
}

TEST_F(SecretFields, NullKeyringSealsNothing) {
  use_keyring({});
  Json obj = ssl();
  ASSERT_TRUE(seal_secrets("ssls", &obj));
  EXPECT_EQ(obj, ssl());
  EXPECT_TRUE(clear_secrets("ssls", obj).empty()) << "nothing to warn about without a keyring";
}

TEST_F(SecretFields, EncryptFieldsSwitchLeavesSslKeysSealed) {
  // APISIX's ssl.lua seals private keys whenever the keyring has a key.
  DataEncryptionConfig c;
  c.enable_encrypt_fields = false;
  set_data_encryption(c);
  Json obj = ssl();
  ASSERT_TRUE(seal_secrets("ssls", &obj));
  EXPECT_NE(obj["key"], fixture("key.pem"));
}

TEST_F(SecretFields, RevealPem) {
  EXPECT_EQ(reveal_pem(kKeyPemSealed).value(), fixture("key.pem"));  // rotation: second key
  EXPECT_EQ(reveal_pem(fixture("key.pem")).value(), fixture("key.pem"));
  EXPECT_EQ(reveal_pem("$env://K").value(), "$env://K");
  EXPECT_EQ(reveal_pem("not*base64").status().message(), "base64 decode ssl key failed");
  use_keyring({"0123456789abcdef"});
  EXPECT_EQ(reveal_pem(kKeyPemSealed).status().message(), "decrypt ssl key failed");
  use_keyring({});
  EXPECT_EQ(reveal_pem(kKeyPemSealed).value(), kKeyPemSealed);  // APISIX: returned as stored
}

TEST_F(SecretFields, RevealSecretsNamesTheField) {
  Json obj = ssl();
  ASSERT_TRUE(seal_secrets("ssls", &obj));
  Json sealed = obj;
  ASSERT_TRUE(reveal_secrets("ssls", &obj));
  EXPECT_EQ(obj, ssl());
  use_keyring({"0123456789abcdef"});
  EXPECT_EQ(reveal_secrets("ssls", &sealed).message(), "key: decrypt ssl key failed");
  sealed["key"] = fixture("key.pem");
  EXPECT_EQ(reveal_secrets("ssls", &sealed).message(), "keys[1]: decrypt ssl key failed");
}

TEST_F(SecretFields, ClearSecretsAreFoundForTheLog) {
  Json obj = ssl();
  EXPECT_EQ(clear_secrets("ssls", obj), (std::vector<std::string>{"key", "keys[1]"}));
  EXPECT_EQ(clear_secrets_note("ssls", obj),
            "key, keys[1] stored in clear although apisix.data_encryption.keyring is set: served "
            "as stored; write it again through the Admin API to store it encrypted");
  ASSERT_TRUE(seal_secrets("ssls", &obj));
  EXPECT_TRUE(clear_secrets("ssls", obj).empty());
  EXPECT_EQ(clear_secrets_note("ssls", obj), "");
}

TEST_F(SecretFields, RedactAndOmitOnlyWhatIsInClear) {
  Json obj = ssl();
  ASSERT_TRUE(seal_secrets("ssls", &obj));
  obj["keys"].push_back(fixture("key.pem"));  // one more, in clear
  Json redacted = obj;
  EXPECT_EQ(redact_clear_secrets("ssls", &redacted), 1u);
  EXPECT_EQ(redacted["key"], obj["key"]);
  EXPECT_EQ(redacted["keys"][0], obj["keys"][0]);
  EXPECT_EQ(redacted["keys"][1], kRedacted);
  EXPECT_EQ(redacted_secrets("ssls", redacted), std::vector<std::string>{"keys[2]"});

  Json omitted = obj;
  EXPECT_EQ(omit_clear_secrets("ssls", &omitted), 1u);
  EXPECT_EQ(omitted["key"], obj["key"]);
  EXPECT_FALSE(omitted.contains("keys"));  // the list goes whole: a partial one misleads

  Json clear = ssl();
  EXPECT_EQ(omit_clear_secrets("ssls", &clear), 2u);
  EXPECT_FALSE(clear.contains("key"));
  EXPECT_EQ(clear["cert"], fixture("cert.pem"));
}

TEST_F(SecretFields, Documents) {
  Json doc = {{"ssls", {ssl()}}, {"routes", {{{"id", "1"}, {"uri", "/"}}}}};
  EXPECT_EQ(redact_document_secrets(&doc), 2u);
  EXPECT_EQ(doc["ssls"][0]["key"], kRedacted);
  Json sealed = {{"ssls", {ssl()}}};
  ASSERT_TRUE(seal_secrets("ssls", &sealed["ssls"][0]));
  ASSERT_TRUE(reveal_document_secrets(&sealed));
  EXPECT_EQ(sealed["ssls"][0], ssl());
  sealed["ssls"][0]["key"] = "garbage*";
  EXPECT_EQ(reveal_document_secrets(&sealed).message(),
            "ssls[0]: key: base64 decode ssl key failed");
}

// decode_ssl reveals: a decoded SslConf holds PEM text whatever is stored.

TEST_F(SecretFields, DecodeSslRevealsSealedKeys) {
  Json obj = ssl();
  obj["key"] = kKeyPemSealed;               // as an APISIX node with the default keyring stores it
  ASSERT_TRUE(seal_secrets("ssls", &obj));  // keys[0] under the first key
  auto s = decode_ssl(obj);
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->key, fixture("key.pem"));
  ASSERT_EQ(s->keys.size(), 1u);
  EXPECT_EQ(s->keys[0], fixture("key.pem"));
}

TEST_F(SecretFields, DecodeSslKeepsClearKeys) {
  auto s = decode_ssl(ssl());
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->key, fixture("key.pem"));
}

TEST_F(SecretFields, DecodeSslRefusesWhatNoKeyDecrypts) {
  Json obj = ssl();
  obj["key"] = kKeyPemSealed;
  use_keyring({"0123456789abcdef"});
  EXPECT_EQ(decode_ssl(obj).status().message(),
            "failed to decrypt previous encrypted key: decrypt ssl key failed");
  obj["key"] = fixture("key.pem");
  obj["keys"][0] = kKeyPemSealed;
  EXPECT_EQ(decode_ssl(obj).status().message(),
            "failed to handle cert-key pair[1]: failed to decrypt previous encrypted key: decrypt "
            "ssl key failed");
  EXPECT_EQ(validate_resource("ssls", obj).message(), decode_ssl(obj).status().message());
}

TEST_F(SecretFields, DecodeSslWithoutKeyringParsesTheCiphertext) {
  // APISIX hands a sealed key to the PEM parser as it is when no keyring is set.
  Json obj = ssl();
  obj["key"] = kKeyPemSealed;
  use_keyring({});
  EXPECT_EQ(decode_ssl(obj).status().message().rfind("failed to parse key: ", 0), 0u)
      << decode_ssl(obj).status().message();
}

}  // namespace secret_fields_test
}  // namespace sluice::config
