// hmac-auth: its confs (APISIX's schema texts) and the rewrite hook over a hand-built
// plugin::Consumers: success, every refusal with APISIX's answer, anonymous_consumer and
// hide_credentials.

#include "plugins/hmac_auth/hmac_auth.h"

#include <gtest/gtest.h>

#include <ctime>
#include <string>
#include <vector>

#include "plugin/consumer.h"

namespace sluice::plugins::hmac_auth {
namespace {

using plugin::Json;

TEST(HmacAuthConfig, Info) {
  EXPECT_EQ(info().name, "hmac-auth");
  EXPECT_EQ(info().priority, 2530);
  EXPECT_TRUE(info().auth);
  EXPECT_NE(info().index, nullptr);
  Json schema = Json::parse(info().schema);
  EXPECT_EQ(schema["properties"]["clock_skew"]["default"], 300);
}

TEST(HmacAuthConfig, Route) {
  struct Case {
    const char* conf;
    const char* error;
  };
  const Case cases[] = {
      {"{}", ""},
      {R"({"allowed_algorithms": ["hmac-sha256"], "clock_skew": 10,
           "signed_headers": ["date"], "validate_request_body": true,
           "hide_credentials": true, "anonymous_consumer": "anon"})",
       ""},
      {R"({"clock_skew": 0})",
       R"(property "clock_skew" validation failed: expected 0 to be at least 1)"},
      {R"({"clock_skew": "1"})",
       R"(property "clock_skew" validation failed: wrong type: expected integer, got string)"},
      {R"({"allowed_algorithms": []})",
       R"(property "allowed_algorithms" validation failed: expect array to have at least 1 items)"},
      {R"({"allowed_algorithms": ["hmac-md5"]})",
       R"(property "allowed_algorithms" validation failed: failed to validate item 1: matches none of the enum values)"},
      {R"({"signed_headers": [""]})",
       R"(property "signed_headers" validation failed: failed to validate item 1: string too short, expected at least 1, got 0)"},
      {R"({"validate_request_body": 1})",
       R"(property "validate_request_body" validation failed: wrong type: expected boolean, got number)"},
      {R"({"anonymous_consumer": ""})",
       R"(property "anonymous_consumer" validation failed: string too short, expected at least 1, got 0)"},
      {R"({"realm": "hmac"})",
       "the realm of a WWW-Authenticate challenge (APISIX 3.15) is not supported yet"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(check(Json::parse(c.conf), plugin::PluginUse::kHttp).message(), c.error) << c.conf;
  }
}

TEST(HmacAuthConfig, Consumer) {
  struct Case {
    const char* conf;
    const char* error;
  };
  const Case cases[] = {
      {R"({"key_id": "k", "secret_key": "s"})", ""},
      {R"({"secret_key": "s"})", R"(property "key_id" is required)"},
      {R"({"key_id": "k"})", R"(property "secret_key" is required)"},
      {R"({"key_id": "", "secret_key": "s"})",
       R"(property "key_id" validation failed: string too short, expected at least 1, got 0)"},
      {R"({"key_id": 1, "secret_key": "s"})",
       R"(property "key_id" validation failed: wrong type: expected string, got number)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(check(Json::parse(c.conf), plugin::PluginUse::kConsumer).message(), c.error)
        << c.conf;
  }
  Json long_key = {{"key_id", "k"}, {"secret_key", std::string(257, 'a')}};
  EXPECT_EQ(
      check(long_key, plugin::PluginUse::kConsumer).message(),
      R"(property "secret_key" validation failed: string too long, expected at most 256, got 257)");
}

std::string now_date(int64_t offset = 0) {
  time_t t = time(nullptr) + offset;
  tm g{};
  gmtime_r(&t, &g);
  char buf[64];
  strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &g);
  return buf;
}

std::string sign(std::string_view key_id, std::string_view secret, Algorithm a,
                 std::string_view algo_name, std::string_view list, const http::RequestHead& h) {
  SignatureParams p;
  p.key_id = key_id;
  p.headers = list;
  std::string s;
  build_signing_string(p, h.method_text, request_uri(h), h.headers, h.num_headers, &s);
  unsigned char mac[kMaxMac];
  size_t n = compute_hmac(a, secret, s, mac);
  std::string sig(4 * ((n + 2) / 3), '\0');
  sig.resize(encode_base64(mac, n, sig.data()));
  return "Signature keyId=\"" + std::string(key_id) + "\",algorithm=\"" + std::string(algo_name) +
         "\",headers=\"" + std::string(list) + "\",signature=\"" + sig + "\"";
}

class HmacAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto john = std::make_unique<plugin::Consumer>();
    john->name = "john";
    const plugin::Consumer& j = consumers_.add(std::move(john));
    auto anon = std::make_unique<plugin::Consumer>();
    anon->name = "anon";
    consumers_.add(std::move(anon));
    const plugin::Credential& cred = consumers_.add_credential(j, "cred-john-hmac-auth");
    Json conf = {{"key_id", "john-key"}, {"secret_key", "john-secret-key"}};
    std::vector<plugin::AuthConf> confs = {{&cred, &conf}};
    std::vector<std::string> warnings;
    auto index = build_index(confs, &warnings);
    ASSERT_TRUE(index.is_ok());
    consumers_.set_index("hmac-auth", *index);
    head_.method = http::Method::kPost;
    head_.method_text = "POST";
    head_.target = "/post?a=1";
    head_.path = "/post";
    head_.query = "a=1";
  }

  void set_headers(std::vector<std::pair<std::string, std::string>> h) {
    storage_ = std::move(h);
    head_.num_headers = storage_.size();
    for (size_t i = 0; i < storage_.size(); ++i) {
      head_.headers[i] = {storage_[i].first, storage_[i].second};
    }
  }

  // Signs the current headers and adds the Authorization.
  void sign_and_add(std::string_view secret = "john-secret-key",
                    std::string_view list = "@request-target date",
                    Algorithm a = Algorithm::kSha256, std::string_view name = "hmac-sha256") {
    std::string auth = sign("john-key", secret, a, name, list, head_);
    auto h = storage_;
    h.emplace_back("Authorization", auth);
    set_headers(std::move(h));
  }

  plugin::Action run(const Json& conf, std::string_view body = {}) {
    auto made = info().make(conf, plugin::BuildEnv{"route/1", shared_});
    EXPECT_TRUE(made.is_ok());
    plugin_ = *made;
    ctx_ = plugin::Context();
    ctx_.req = &head_;
    ctx_.consumers = &consumers_;
    ctx_.request_body = body;
    return plugin_->rewrite(ctx_);
  }

  void expect_401(const Json& conf, std::string_view message, std::string_view body = {}) {
    EXPECT_EQ(run(conf, body), plugin::Action::kReply);
    EXPECT_EQ(ctx_.reply_status, 401);
    EXPECT_EQ(ctx_.reply_body, std::string(R"({"message":")") + std::string(message) + "\"}\n");
    EXPECT_TRUE(ctx_.resp.headers.empty());  // APISIX's hmac-auth sends no challenge
  }

  plugin::Consumers consumers_;
  plugin::Shared shared_;
  http::RequestHead head_;
  std::vector<std::pair<std::string, std::string>> storage_;
  std::shared_ptr<const plugin::Plugin> plugin_;
  plugin::Context ctx_;
};

TEST_F(HmacAuthTest, GoodSignature) {
  set_headers({{"Date", now_date()}});
  sign_and_add();
  ASSERT_EQ(run(Json::object()), plugin::Action::kContinue);
  EXPECT_EQ(ctx_.consumer, "john");
  ASSERT_NE(ctx_.credential, nullptr);
  EXPECT_EQ(ctx_.credential->id, "cred-john-hmac-auth");
  EXPECT_FALSE(ctx_.upstream.headers.drops("Authorization"));
}

TEST_F(HmacAuthTest, EachAlgorithmAndXDate) {
  set_headers({{"X-Date", now_date()}});
  sign_and_add("john-secret-key", "@request-target x-date", Algorithm::kSha512, "hmac-sha512");
  EXPECT_EQ(run(Json::object()), plugin::Action::kContinue);
  set_headers({{"Date", now_date()}});
  sign_and_add("john-secret-key", "@request-target date", Algorithm::kSha1, "hmac-sha1");
  EXPECT_EQ(run(Json::object()), plugin::Action::kContinue);
  expect_401({{"allowed_algorithms", {"hmac-sha256"}}}, "client request can't be validated");
}

TEST_F(HmacAuthTest, Refusals) {
  const char* kCannot = "client request can't be validated";
  set_headers({{"Date", now_date()}});
  expect_401(Json::object(), "client request can't be validated: missing Authorization header");
  set_headers({{"Date", now_date()}, {"Authorization", "Basic Zm9vOmJhcg=="}});
  expect_401(Json::object(),
             "client request can't be validated: Authorization header does not start with "
             "'Signature'");
  set_headers({{"Date", now_date()}, {"Authorization", "Signature keyId=\"a\",keyId=\"b\""}});
  expect_401(Json::object(), kCannot);

  set_headers({{"Date", now_date()}});
  sign_and_add("wrong-secret");
  expect_401(Json::object(), kCannot);

  set_headers({{"Date", now_date(-301)}});  // replayed: outside the default 300 s
  sign_and_add();
  expect_401(Json::object(), kCannot);
  EXPECT_EQ(run({{"clock_skew", 400}}), plugin::Action::kContinue);

  set_headers({{"Date", "Sunday, 06-Nov-94 08:49:37 GMT"}});
  sign_and_add();
  expect_401(Json::object(), kCannot);

  set_headers({});  // no Date
  sign_and_add("john-secret-key", "@request-target");
  expect_401(Json::object(), kCannot);
}

TEST_F(HmacAuthTest, TamperedRequest) {
  set_headers({{"Date", now_date()}, {"X-A", "1"}});
  sign_and_add("john-secret-key", "@request-target date x-a");
  storage_[1].second = "2";
  set_headers(storage_);
  expect_401(Json::object(), "client request can't be validated");
  storage_[1].second = "1";
  set_headers(storage_);
  head_.target = "/post?a=2";
  expect_401(Json::object(), "client request can't be validated");
  head_.target = "/post?a=1";
  EXPECT_EQ(run(Json::object()), plugin::Action::kContinue);
}

TEST_F(HmacAuthTest, UnknownKeyId) {
  set_headers({{"Date", now_date()}});
  std::string auth = sign("nobody", "john-secret-key", Algorithm::kSha256, "hmac-sha256",
                          "@request-target date", head_);
  storage_.emplace_back("Authorization", auth);
  set_headers(storage_);
  expect_401(Json::object(), "client request can't be validated");
}

TEST_F(HmacAuthTest, SignedHeaders) {
  Json conf = {{"signed_headers", {"date", "x-custom-header-a"}}};
  set_headers({{"Date", now_date()}, {"x-custom-header-a", "hello123"}});
  sign_and_add("john-secret-key", "@request-target date");
  expect_401(conf, "client request can't be validated");
  set_headers({{"Date", now_date()}, {"x-custom-header-a", "hello123"}});
  sign_and_add("john-secret-key", "@request-target date x-custom-header-a");
  EXPECT_EQ(run(conf), plugin::Action::kContinue);
}

TEST_F(HmacAuthTest, BodyDigest) {
  Json conf = {{"validate_request_body", true}};
  const std::string body = R"({"name": "world"})";
  set_headers(
      {{"Date", now_date()}, {"Digest", "SHA-256=78qzJuLwSpZ8HacsTdFCQJWxzPMOf8bYctRk2ySLpS8="}});
  sign_and_add();
  auto made = info().make(conf, plugin::BuildEnv{"route/1", shared_});
  ASSERT_TRUE(made.is_ok());
  EXPECT_TRUE((*made)->needs_body());
  EXPECT_EQ(run(conf, body), plugin::Action::kContinue);
  expect_401(conf, "client request can't be validated", R"({"name": "World"})");
  set_headers({{"Date", now_date()}});
  sign_and_add();
  expect_401(conf, "client request can't be validated", body);  // no Digest
  EXPECT_FALSE(info().make(Json::object(), {"route/1", shared_}).value()->needs_body());
}

TEST_F(HmacAuthTest, HideCredentials) {
  set_headers({{"Date", now_date()}});
  sign_and_add();
  ASSERT_EQ(run({{"hide_credentials", true}}), plugin::Action::kContinue);
  EXPECT_TRUE(ctx_.upstream.headers.drops("Authorization"));
}

TEST_F(HmacAuthTest, AnonymousConsumer) {
  set_headers({{"Date", now_date()}});
  ASSERT_EQ(run({{"anonymous_consumer", "anon"}}), plugin::Action::kContinue);
  EXPECT_EQ(ctx_.consumer, "anon");
  EXPECT_EQ(run({{"anonymous_consumer", "ghost"}}), plugin::Action::kReply);
  EXPECT_EQ(ctx_.reply_status, 401);
  EXPECT_EQ(ctx_.reply_body, "{\"message\":\"Invalid user authorization\"}\n");
  EXPECT_TRUE(ctx_.resp.headers.empty());
}

TEST_F(HmacAuthTest, NoConsumerHasHmacAuth) {
  plugin::Consumers empty;
  set_headers({{"Date", now_date()}});
  sign_and_add();
  auto made = info().make(Json::object(), plugin::BuildEnv{"route/1", shared_});
  ctx_ = plugin::Context();
  ctx_.req = &head_;
  ctx_.consumers = &empty;
  EXPECT_EQ((*made)->rewrite(ctx_), plugin::Action::kReply);
  EXPECT_EQ(ctx_.reply_body, "{\"message\":\"client request can't be validated\"}\n");
}

TEST(HmacAuthIndex, LaterKeyIdWinsWithAWarning) {
  plugin::Consumers consumers;
  auto a = std::make_unique<plugin::Consumer>();
  a->name = "a";
  auto b = std::make_unique<plugin::Consumer>();
  b->name = "b";
  const plugin::Consumer& ca = consumers.add(std::move(a));
  const plugin::Consumer& cb = consumers.add(std::move(b));
  Json c1 = {{"key_id", "k"}, {"secret_key", "s1"}};
  Json c2 = {{"key_id", "k"}, {"secret_key", "s2"}};
  std::vector<plugin::AuthConf> confs = {{&ca.self, &c1}, {&cb.self, &c2}};
  std::vector<std::string> warnings;
  auto index = build_index(confs, &warnings);
  ASSERT_TRUE(index.is_ok());
  const auto* idx = static_cast<const Index*>(index->get());
  ASSERT_NE(idx->find("k"), nullptr);
  EXPECT_EQ(idx->find("k")->secret, "s2");
  EXPECT_EQ(idx->find("k")->credential->consumer->name, "b");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("consumers a and b"), std::string::npos);
}

}  // namespace
}  // namespace sluice::plugins::hmac_auth
