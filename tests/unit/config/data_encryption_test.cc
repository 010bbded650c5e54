#include "config/data_encryption.h"

#include <gtest/gtest.h>
#include <openssl/err.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "config/gateway_config.h"

namespace sluice::config {
namespace data_encryption_test {

// APISIX's default keyring (conf/config-default.yaml), in its order.
const Keyring kDefault({"qeddd145sfvddff3", "edd1c9f0985e76a2"});
const Keyring kSecondOnly({"edd1c9f0985e76a2"});

std::string key_pem() {
  auto path = std::filesystem::path(__FILE__).parent_path() / "testdata" / "key.pem";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << path;
  return ss.str();
}

// Vectors made with the openssl CLI when this test was written, each keyring entry as key and
// IV (K = `printf %s <entry> | xxd -p`):
//   printf %s <clear> | openssl enc -aes-128-cbc -K $K -iv $K -base64 -A
struct Vector {
  const char* key;
  std::string clear;
  const char* sealed;
};

const Vector kVectors[] = {
    {"qeddd145sfvddff3", "hello sluice", "V3S42yVyCCqs/1uyNvVFEQ=="},
    {"qeddd145sfvddff3", "", "CEGh183MAO3X8/ZV2jzHeA=="},
    // A whole block of clear text gains a whole block of padding.
    {"qeddd145sfvddff3", "0123456789abcdef", "qpxu8KrwHqjW92zgZHFDOLQA3RNdV40A6RLotmKQPVw="},
    {"edd1c9f0985e76a2", "-----BEGIN PRIVATE KEY-----",
     "YnwwDKc5vNzo0OU4StTRQZvoD7jgGWMQZvaN8uQ9yd0="},
};

// testdata/key.pem under the second default key: `openssl enc ... -in key.pem`.
constexpr const char* kKeyPemSealed =
    "YnwwDKc5vNzo0OU4StTRQf9du0E4nyUPcmo7GB3Z2BDQb+vbvIfJx5GZcGygWXfj45PUgxcy5F7EnKvAvvzKuAJemWtt"
    "8URpEVpXV6T56afzccKhV2m5cxQJLeQyrdGr87yKxxuKRj/6BE7fTLcn8CW4KbMtqj2DAGz0TwO+y6r2FbY8jtYyxVtC"
    "rIKu2y8coAnNUN+vhpgOaC+P1RfcswI/9N2GLco7f+U2mcNBJ9Z36fJpuxfpsN93Jd/csQXD44HB460YKpkpSPqDiAPG"
    "kt0aa2p5sRu9zVMYNL4zNLKwee42mjFNaneds2xld4mNWnMS3xPWncGEmuexc/K5KA==";

TEST(Keyring, EncryptsAsTheOpensslCliDoes) {
  for (const Vector& v : kVectors) {
    auto sealed = Keyring({v.key}).encrypt(v.clear);
    ASSERT_TRUE(sealed.is_ok()) << sealed.status().message();
    EXPECT_EQ(*sealed, v.sealed) << v.clear;
  }
  auto pem = Keyring({"edd1c9f0985e76a2"}).encrypt(key_pem());
  ASSERT_TRUE(pem.is_ok());
  EXPECT_EQ(*pem, kKeyPemSealed);
}

TEST(Keyring, EncryptsWithTheFirstKey) {
  EXPECT_EQ(kDefault.encrypt("hello sluice").value(), "V3S42yVyCCqs/1uyNvVFEQ==");
}

TEST(Keyring, DecryptsTheVectors) {
  for (const Vector& v : kVectors) {
    auto clear = Keyring({v.key}).decrypt(v.sealed, "ssl key");
    ASSERT_TRUE(clear.is_ok()) << clear.status().message();
    EXPECT_EQ(*clear, v.clear);
  }
}

TEST(Keyring, RoundTrip) {
  std::string pem = key_pem();
  auto sealed = kDefault.encrypt(pem);
  ASSERT_TRUE(sealed.is_ok());
  EXPECT_EQ(sealed->find("PRIVATE KEY"), std::string::npos);
  EXPECT_EQ(kDefault.decrypt(*sealed, "ssl key").value(), pem);
}

TEST(Keyring, RotationDecryptsWithALaterKey) {
  // Sealed by a node whose keyring began with the second default key: the first key fails
  // and the second succeeds.
  auto clear = kDefault.decrypt(kKeyPemSealed, "ssl key");
  ASSERT_TRUE(clear.is_ok()) << clear.status().message();
  EXPECT_EQ(*clear, key_pem());
}

TEST(Keyring, WrongKeyringFailsAsApisixSays) {
  Keyring other({"0123456789abcdef", "fedcba9876543210"});
  auto r = other.decrypt(kKeyPemSealed, "ssl key");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "decrypt ssl key failed");
  EXPECT_EQ(ERR_peek_error(), 0u) << "a failed try must not leave OpenSSL errors queued";
}

TEST(Keyring, NotBase64FailsAsApisixSays) {
  for (const char* text : {"-not base64-", "abc def=", "A", "\n"}) {
    auto r = kDefault.decrypt(text, "ssl key");
    ASSERT_FALSE(r.is_ok()) << text;
    EXPECT_EQ(r.status().message(), "base64 decode ssl key failed") << text;
  }
}

TEST(Keyring, EmptyKeyringCannotEncrypt) {
  auto r = Keyring().encrypt("x");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "no keyring configured");
  EXPECT_EQ(Keyring().decrypt("V3S42yVyCCqs/1uyNvVFEQ==", "x").status().message(),
            "decrypt x failed");
}

// A wrong key passes the padding check about once in 256 tries; the garbage it yields is
// refused by `accept`, and the next key, the right one, is tried.
TEST(Keyring, AcceptRefusesGarbageFromAWrongKey) {
  std::mt19937 rng(7);
  auto pem_like = [](std::string_view s) { return s.starts_with("---"); };
  Keyring first({"qeddd145sfvddff3"});
  for (int i = 0; i < 20000; ++i) {
    std::string clear = "-----BEGIN PRIVATE KEY-----\n" + std::to_string(rng());
    std::string sealed = kSecondOnly.encrypt(clear).value();
    if (!first.decrypt(sealed, "k").is_ok()) {
      continue;
    }
    // The first default key "decrypts" it, wrongly.
    EXPECT_NE(kDefault.decrypt(sealed, "k").value(), clear);
    auto right = kDefault.decrypt(sealed, "k", +pem_like);
    ASSERT_TRUE(right.is_ok());
    EXPECT_EQ(*right, clear);
    return;
  }
  FAIL() << "no ciphertext found that the wrong key's padding check accepts";
}

TEST(Base64, MatchesNgx) {
  EXPECT_EQ(encode_base64(""), "");
  EXPECT_EQ(encode_base64("f"), "Zg==");
  EXPECT_EQ(encode_base64("foob"), "Zm9vYg==");
  std::string out;
  ASSERT_TRUE(decode_base64("Zm9vYg==", &out));
  EXPECT_EQ(out, "foob");
  ASSERT_TRUE(decode_base64("Zm9vYg", &out));  // padding is optional
  EXPECT_EQ(out, "foob");
  EXPECT_FALSE(decode_base64("Zm9v\nYg==", &out));
  EXPECT_FALSE(decode_base64("Zm9vY", &out));
  EXPECT_FALSE(decode_base64("Zm9v-g==", &out));
}

// apisix.data_encryption in config.yaml.

TEST(DataEncryptionConfig, DefaultsAreApisix) {
  auto c = parse_gateway_config("", "conf");
  ASSERT_TRUE(c.is_ok());
  EXPECT_TRUE(c->data_encryption.enable_encrypt_fields);
  EXPECT_EQ(c->data_encryption.keyring,
            (std::vector<std::string>{"qeddd145sfvddff3", "edd1c9f0985e76a2"}));
}

TEST(DataEncryptionConfig, Reads) {
  auto c = parse_gateway_config(R"(
apisix:
  data_encryption:
    enable_encrypt_fields: false
    keyring:
      - 0123456789abcdef
      - edd1c9f0985e76a2
)",
                                "conf");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_FALSE(c->data_encryption.enable_encrypt_fields);
  EXPECT_EQ(c->data_encryption.keyring,
            (std::vector<std::string>{"0123456789abcdef", "edd1c9f0985e76a2"}));
  EXPECT_TRUE(c->warnings.empty());
}

TEST(DataEncryptionConfig, OneKeyAsAString) {
  auto c = parse_gateway_config("apisix:\n  data_encryption:\n    keyring: abcdefghijklmnop\n", "");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->data_encryption.keyring, std::vector<std::string>{"abcdefghijklmnop"});
}

TEST(DataEncryptionConfig, NullKeyringTurnsSealingOff) {
  auto c = parse_gateway_config("apisix:\n  data_encryption:\n    keyring: ~\n", "");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_TRUE(c->data_encryption.keyring.empty());
  EXPECT_TRUE(c->data_encryption.enable_encrypt_fields);
}

TEST(DataEncryptionConfig, BadKeyringsAreStartupErrors) {
  struct Case {
    const char* yaml;
    const char* error;
  };
  const Case cases[] = {
      {"keyring: [0123456789abcdef, short]",
       "config.yaml: apisix.data_encryption.keyring[1]: expected exactly 16 characters (an "
       "AES-128 key), got 5"},
      {"keyring: [0123456789abcdef0123456789abcdef]",
       "config.yaml: apisix.data_encryption.keyring[0]: expected exactly 16 characters (an "
       "AES-128 key), got 32"},
      {"keyring: [1234567890123456]",  // YAML reads it as a number, APISIX's schema refuses it
       "config.yaml: apisix.data_encryption.keyring[0]: expected a 16-character string (an "
       "AES-128 key), got number"},
      {"keyring: []",
       "config.yaml: apisix.data_encryption.keyring: expected a list of 16-character keys, the "
       "first one encrypting (`keyring: ~` stores secrets unencrypted), got an empty list"},
      {"keyring: tooshort",
       "config.yaml: apisix.data_encryption.keyring: expected exactly 16 characters (an AES-128 "
       "key), got 8"},
      {"enable_encrypt_fields: maybe",
       "config.yaml: apisix.data_encryption.enable_encrypt_fields: "},
  };
  for (const Case& c : cases) {
    auto r = parse_gateway_config(std::string("apisix:\n  data_encryption:\n    ") + c.yaml, "");
    ASSERT_FALSE(r.is_ok()) << c.yaml;
    EXPECT_EQ(r.status().message().substr(0, std::string_view(c.error).size()), c.error)
        << r.status().message();
  }
}

TEST(DataEncryptionConfig, UnknownKeysAreWarnings) {
  auto c = parse_gateway_config("apisix:\n  data_encryption:\n    enable: true\n", "");
  ASSERT_TRUE(c.is_ok());
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0],
            "config.yaml: apisix.data_encryption.enable is not supported yet and is ignored");
}

}  // namespace data_encryption_test
}  // namespace sluice::config
