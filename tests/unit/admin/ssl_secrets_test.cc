// ssls' private keys through the Admin API: sealed with apisix.data_encryption's keyring before
// they are stored, never answered in clear.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "admin/api.h"
#include "config/secret_fields.h"

namespace sluice::admin {
namespace {

using config::Json;

std::string pem_fixture(const char* name) {
  auto path = std::filesystem::path(__FILE__).parent_path() / ".." / "config" / "testdata" / name;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << path;
  return ss.str();
}

class SslSecretsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "sluice-admin-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto s = store::open_embedded(dir_);
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    store_ = std::move(s).value();
    config::AdminConfig conf;
    conf.keys = {{"admin", "k", config::AdminRole::kAdmin}};
    api_ = std::make_unique<Api>(
        std::move(Auth::create(conf)).value(), *store_, index_, [] { return int64_t{1}; },
        [this] { store_->take_changes(); });
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
    config::set_data_encryption(config::DataEncryptionConfig{});
  }

  Json call(const std::string& method, const std::string& path, const Json& body = nullptr,
            int want = 200) {
    server::AdminRequest r;
    r.method = method;
    r.path = "/apisix/admin" + path;
    r.body = body.is_null() ? "" : body.dump();
    r.headers = {{"x-api-key", "k"}};
    router::parse_ip("127.0.0.1", &r.peer);
    server::AdminResponse a = api_->handle(r);
    EXPECT_EQ(a.status, want) << method << " " << path << ": " << a.body;
    return Json::parse(a.body);
  }
  Json stored(const std::string& key) {
    auto e = store_->get(key);
    EXPECT_TRUE(e.is_ok() && e->has_value());
    return Json::parse((**e).value);
  }
  static Json ssl() {
    return Json{{"cert", pem_fixture("cert.pem")},
                {"key", pem_fixture("key.pem")},
                {"sni", "test.example"},
                {"certs", Json::array({pem_fixture("cert.pem")})},
                {"keys", Json::array({pem_fixture("key.pem")})}};
  }
  static bool sealed_pem(const Json& v) {
    if (!v.is_string() || v.get<std::string>().starts_with("---")) {
      return false;
    }
    auto clear = config::reveal_pem(v.get<std::string>());
    return clear.is_ok() && *clear == pem_fixture("key.pem");
  }

  std::string dir_;
  std::unique_ptr<store::ConfigStore> store_;
  store::ConfigIndex index_;
  std::unique_ptr<Api> api_;
};

TEST_F(SslSecretsTest, PutStoresAndAnswersTheCiphertext) {
  Json put = call("PUT", "/ssls/1", ssl(), 201)["value"];
  EXPECT_TRUE(sealed_pem(put["key"])) << put["key"];
  EXPECT_TRUE(sealed_pem(put["keys"][0])) << put["keys"][0];
  EXPECT_EQ(put["cert"], pem_fixture("cert.pem"));
  Json at_rest = stored("/apisix/ssls/1");
  EXPECT_EQ(at_rest, put);
  EXPECT_EQ(at_rest.dump().find("PRIVATE KEY"), std::string::npos);
}

TEST_F(SslSecretsTest, GetOneLeavesTheKeyOutAsApisix) {
  Json put = call("PUT", "/ssls/1", ssl(), 201)["value"];
  Json one = call("GET", "/ssls/1")["value"];
  EXPECT_FALSE(one.contains("key"));
  EXPECT_EQ(one["keys"], put["keys"]);
  Json list = call("GET", "/ssls")["list"];
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["value"], put);  // a list shows what is stored, sealed
}

TEST_F(SslSecretsTest, PostSealsToo) {
  Json post = call("POST", "/ssls", ssl(), 201)["value"];
  EXPECT_TRUE(sealed_pem(post["key"]));
}

TEST_F(SslSecretsTest, PatchEchoingAGetBodyDoesNotSealTwice) {
  Json put = call("PUT", "/ssls/1", ssl(), 201)["value"];
  Json body = call("GET", "/ssls/1")["value"];
  body.erase("create_time");
  body.erase("update_time");
  body["key"] = put["key"];  // the client kept the sealed key from the PUT's answer
  Json patched = call("PATCH", "/ssls/1", body)["value"];
  EXPECT_EQ(patched["key"], put["key"]);
  EXPECT_EQ(patched["keys"], put["keys"]);
  EXPECT_EQ(stored("/apisix/ssls/1")["key"], put["key"]);
}

TEST_F(SslSecretsTest, PatchSealsANewClearKey) {
  call("PUT", "/ssls/1", ssl(), 201);
  Json by_path = call("PATCH", "/ssls/1/key", pem_fixture("key.pem"))["value"];
  EXPECT_TRUE(sealed_pem(by_path["key"]));
  Json whole = call("PATCH", "/ssls/1", Json{{"keys", Json::array({pem_fixture("key.pem")})}});
  EXPECT_TRUE(sealed_pem(whole["value"]["keys"][0]));
  EXPECT_EQ(stored("/apisix/ssls/1").dump().find("PRIVATE KEY"), std::string::npos);
}

TEST_F(SslSecretsTest, KeySealedUnderAnotherKeyringIsRefused) {
  config::DataEncryptionConfig other;
  other.keyring = {"0123456789abcdef"};
  config::set_data_encryption(other);
  Json foreign = call("PUT", "/ssls/1", ssl(), 201)["value"];
  config::set_data_encryption(config::DataEncryptionConfig{});
  Json body = ssl();
  body["key"] = foreign["key"];
  Json r = call("PUT", "/ssls/2", body, 400);
  EXPECT_EQ(r["error_msg"], "failed to decrypt previous encrypted key: decrypt ssl key failed");
}

TEST_F(SslSecretsTest, WithoutKeyringKeysAreStoredInClearButNeverAnswered) {
  config::DataEncryptionConfig off;
  off.keyring.clear();
  config::set_data_encryption(off);
  Json put = call("PUT", "/ssls/1", ssl(), 201)["value"];
  EXPECT_FALSE(put.contains("key"));
  EXPECT_FALSE(put.contains("keys"));
  EXPECT_EQ(put["sni"], "test.example");
  EXPECT_EQ(stored("/apisix/ssls/1")["key"], pem_fixture("key.pem"));  // `keyring: ~`
  Json list = call("GET", "/ssls")["list"];
  EXPECT_FALSE(list[0]["value"].contains("key"));
  EXPECT_FALSE(list[0]["value"].contains("keys"));
}

}  // namespace
}  // namespace sluice::admin
