// /apisix/admin/consumers/{username}/credentials (APISIX 3.7+) over a real embedded store.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "admin/api.h"
#include "config/secret_fields.h"

namespace sluice::admin {
namespace {

using config::Json;

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "sluice-creds-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto s = store::open_embedded_with_clock(dir_, [this] { return now_; });
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    store_ = std::move(s).value();
    config::AdminConfig conf;
    conf.keys = {{"admin", "k", config::AdminRole::kAdmin}};
    api_ = std::make_unique<Api>(
        std::move(Auth::create(conf)).value(), *store_, index_, [this] { return now_; },
        [this] { absorb(); });
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
    config::set_data_encryption(config::DataEncryptionConfig{});
  }
  void absorb() {
    for (const auto& c : store_->take_changes()) {
      ASSERT_TRUE(index_.apply(c).is_ok()) << c.entry.key;
    }
  }
  server::AdminResponse call(const std::string& method, const std::string& path,
                             const std::string& body = "") {
    server::AdminRequest r;
    r.method = method;
    r.path = "/apisix/admin" + path;
    r.body = body;
    r.headers = {{"x-api-key", "k"}};
    router::parse_ip("127.0.0.1", &r.peer);
    return api_->handle(r);
  }
  static Json json(const server::AdminResponse& r) { return Json::parse(r.body); }
  static std::string error(const server::AdminResponse& r) {
    return json(r).value("error_msg", std::string());
  }
  void put_jack() {
    ASSERT_EQ(call("PUT", "/consumers/jack", R"({"username":"jack"})").status, 201);
  }

  std::string dir_;
  int64_t now_ = 1700000000;
  std::unique_ptr<store::ConfigStore> store_;
  store::ConfigIndex index_;
  std::unique_ptr<Api> api_;
};

TEST_F(CredentialsTest, PutGetReplaceDelete) {
  put_jack();
  auto r = call("PUT", "/consumers/jack/credentials/a", R"({"desc":"for jack","plugins":{}})");
  ASSERT_EQ(r.status, 201) << r.body;
  Json v = json(r);
  EXPECT_EQ(v["key"], "/apisix/consumers/jack/credentials/a");
  EXPECT_EQ(v["value"]["id"], "a");
  EXPECT_EQ(v["value"]["desc"], "for jack");
  EXPECT_EQ(v["value"]["create_time"], now_);
  // Stored in APISIX's etcd layout, and decoded for the snapshot with its consumer.
  auto stored = store_->get("/apisix/consumers/jack/credentials/a");
  ASSERT_TRUE(stored.is_ok() && stored->has_value());
  ASSERT_EQ(index_.set().credentials.size(), 1u);
  EXPECT_EQ(index_.set().credentials[0].consumer, "jack");
  EXPECT_EQ(index_.set().credentials[0].id, "a");

  now_ += 5;
  r = call("PUT", "/consumers/jack/credentials/a", R"({"desc":"new"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json(r)["value"]["create_time"], now_ - 5);
  EXPECT_EQ(json(r)["value"]["update_time"], now_);

  r = call("GET", "/consumers/jack/credentials/a");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json(r)["value"]["desc"], "new");
  EXPECT_TRUE(json(r).contains("modifiedIndex"));

  // The id may come from the body alone (APISIX's TEST 15), stored as a string.
  r = call("PUT", "/consumers/jack/credentials", R"({"id":7})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json(r)["key"], "/apisix/consumers/jack/credentials/7");
  EXPECT_EQ(json(r)["value"]["id"], "7");

  r = call("DELETE", "/consumers/jack/credentials/a");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json(r)["key"], "/apisix/consumers/jack/credentials/a");
  EXPECT_EQ(json(r)["deleted"], "1");
  EXPECT_EQ(call("GET", "/consumers/jack/credentials/a").status, 404);
  EXPECT_EQ(call("DELETE", "/consumers/jack/credentials/a").status, 404);
  ASSERT_EQ(index_.set().credentials.size(), 1u);
  EXPECT_EQ(index_.set().credentials[0].id, "7");
}

TEST_F(CredentialsTest, ListsApartFromTheConsumers) {
  put_jack();
  ASSERT_EQ(call("PUT", "/consumers/jack/credentials/b", "{}").status, 201);
  ASSERT_EQ(call("PUT", "/consumers/jack/credentials/a", "{}").status, 201);
  auto r = call("GET", "/consumers/jack/credentials");
  ASSERT_EQ(r.status, 200) << r.body;
  Json v = json(r);
  ASSERT_EQ(v["total"], 2);
  EXPECT_EQ(v["list"][0]["key"], "/apisix/consumers/jack/credentials/a");
  EXPECT_EQ(v["list"][1]["key"], "/apisix/consumers/jack/credentials/b");
  // The consumers' list holds consumers only (APISIX's filter_consumers_list).
  r = call("GET", "/consumers");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(json(r)["total"], 1) << r.body;
  EXPECT_EQ(json(r)["list"][0]["key"], "/apisix/consumers/jack");
  ASSERT_EQ(index_.set().consumers.size(), 1u);
  // No credential under a consumer: etcd has no key there, APISIX answers 404.
  ASSERT_EQ(call("PUT", "/consumers/rose", R"({"username":"rose"})").status, 201);
  r = call("GET", "/consumers/rose/credentials");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json(r)["message"], "Key not found");
}

TEST_F(CredentialsTest, DeletingTheConsumerDeletesItsCredentials) {
  put_jack();
  ASSERT_EQ(call("PUT", "/consumers/jack/credentials/a", "{}").status, 201);
  ASSERT_EQ(call("PUT", "/consumers/jackson", R"({"username":"jackson"})").status, 201);
  ASSERT_EQ(call("PUT", "/consumers/jackson/credentials/a", "{}").status, 201);
  auto r = call("DELETE", "/consumers/jack");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json(r)["key"], "/apisix/consumers/jack");
  auto left = store_->list("/apisix/consumers/");
  ASSERT_TRUE(left.is_ok());
  ASSERT_EQ(left->size(), 2u);
  EXPECT_EQ((*left)[0].key, "/apisix/consumers/jackson");
  EXPECT_EQ((*left)[1].key, "/apisix/consumers/jackson/credentials/a");
  EXPECT_EQ(call("GET", "/consumers/jack/credentials").status, 404);
  ASSERT_EQ(index_.set().credentials.size(), 1u);
  EXPECT_EQ(index_.set().credentials[0].consumer, "jackson");
}

TEST_F(CredentialsTest, ErrorsAsApisixAnswersThem) {
  struct Case {
    const char* method;
    const char* path;
    const char* body;
    int status;
    const char* error;
  };
  const Case cases[] = {
      // The body is checked before the consumer is looked up (resource.lua's put).
      {"PUT", "/consumers/nobody/credentials/a", "{}", 404, "consumer not found"},
      {"PUT", "/consumers/nobody/credentials/a", R"({"x":1})", 400,
       "invalid configuration: additional properties forbidden, found x"},
      {"PUT", "/consumers/jack/credentials", "{}", 400, "missing credential id"},
      {"PUT", "/consumers/jack/credentials/a", R"({"id":"b"})", 400, "wrong credential id"},
      {"PUT", "/consumers/jack/credentials/a", R"({"create_time":1})", 400,
       "the property is forbidden:  create_time"},
      {"PUT", "/consumers/jack/credentials/a", R"({"plugins":{"limit-count":{"count":1,
          "time_window":60}}})",
       400, "only supports auth type plugins in consumer credential"},
      {"PUT", "/consumers/jack/credentials/a", R"({"plugins":{"no-such-auth":{"key":"k"}}})", 400,
       "invalid plugins configuration: unknown plugin [no-such-auth]"},
      {"PUT", "/consumers/jack/credentials/a", R"({"plugins":{"a":{},"b":{}}})", 400,
       "invalid configuration: property \"plugins\" validation failed: expect object to have "
       "at most 1 properties"},
      {"POST", "/consumers/jack/credentials", "{}", 405,
       "not supported `POST` method for credential"},
      {"PATCH", "/consumers/jack/credentials/a", "{}", 405,
       "not supported `PATCH` method for credential"},
      {"DELETE", "/consumers/jack/credentials", "", 400, "missing credential id"},
  };
  put_jack();
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.method) + " " + c.path + " " + c.body);
    auto r = call(c.method, c.path, c.body);
    EXPECT_EQ(r.status, c.status) << r.body;
    EXPECT_EQ(error(r), c.error);
  }
  auto all = store_->list("/apisix/consumers/jack/");
  ASSERT_TRUE(all.is_ok());
  EXPECT_TRUE(all->empty()) << "nothing stored on any error";
}

// What a GET answers: APISIX's admin/init.lua decrypts consumers' and credentials' plugin
// fields for every GET; the stored value stays sealed. (No auth plugin is built in yet, so the
// sealed values are written to the store as an APISIX node would write them.)
TEST_F(CredentialsTest, GetAnswersSealedPluginFieldsOpened) {
  // "the-key" sealed by openssl under the first default key.
  const std::string sealed = "JCX7x1qN5e9kHt0GuJfWpw==";
  const std::string value = R"({"id":"a","plugins":{"key-auth":{"key":")" + sealed + R"("}}})";
  ASSERT_TRUE(store_->put("/apisix/consumers/jack", R"({"username":"jack"})", 0, 0).is_ok());
  ASSERT_TRUE(store_->put("/apisix/consumers/jack/credentials/a", value, 0, 0).is_ok());
  ASSERT_TRUE(store_
                  ->put("/apisix/consumers/rose",
                        R"({"username":"rose","plugins":{"key-auth":{"key":")" + sealed + "\"}}}",
                        0, 0)
                  .is_ok());
  store_->take_changes();  // an unknown plugin would not decode; the answers are what is tested
  EXPECT_EQ(
      json(call("GET", "/consumers/jack/credentials/a"))["value"]["plugins"]["key-auth"]["key"],
      "the-key");
  EXPECT_EQ(
      json(call("GET",
                "/consumers/jack/credentials"))["list"][0]["value"]["plugins"]["key-auth"]["key"],
      "the-key");
  EXPECT_EQ(json(call("GET", "/consumers/rose"))["value"]["plugins"]["key-auth"]["key"], "the-key");
  EXPECT_EQ(json(call("GET", "/consumers"))["list"][1]["value"]["plugins"]["key-auth"]["key"],
            "the-key");
  EXPECT_EQ(store_->get("/apisix/consumers/jack/credentials/a").value()->value, value);
  // With enable_encrypt_fields off, APISIX reads fields as stored.
  config::DataEncryptionConfig off;
  off.enable_encrypt_fields = false;
  config::set_data_encryption(off);
  EXPECT_EQ(
      json(call("GET", "/consumers/jack/credentials/a"))["value"]["plugins"]["key-auth"]["key"],
      sealed);
}

}  // namespace
}  // namespace sluice::admin
