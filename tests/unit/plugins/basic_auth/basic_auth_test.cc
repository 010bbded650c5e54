// basic-auth: its confs (APISIX's schema texts), the strict Authorization parser and the
// rewrite hook over a hand-built plugin::Consumers.

#include "plugins/basic_auth/basic_auth.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugin/consumer.h"

namespace sluice::plugins::basic_auth {
namespace {

using plugin::Json;

TEST(BasicAuthConfig, Info) {
  EXPECT_EQ(info().name, "basic-auth");
  EXPECT_EQ(info().priority, 2520);
  EXPECT_TRUE(info().auth);
  EXPECT_NE(info().index, nullptr);
  Json schema = Json::parse(info().schema);
  EXPECT_EQ(schema["properties"]["hide_credentials"]["default"], false);
}

TEST(BasicAuthConfig, RouteAndConsumer) {
  struct Case {
    plugin::PluginUse use;
    const char* conf;
    const char* error;
  };
  using plugin::PluginUse;
  const Case cases[] = {
      {PluginUse::kHttp, "{}", ""},
      {PluginUse::kHttp, R"({"hide_credentials": true, "anonymous_consumer": "a", "realm": "x"})",
       ""},
      {PluginUse::kHttp, R"({"hide_credentials": "yes"})",
       R"(property "hide_credentials" validation failed: wrong type: expected boolean, got string)"},
      {PluginUse::kHttp, R"({"anonymous_consumer": ""})",
       R"(property "anonymous_consumer" validation failed: string too short, expected at least 1, got 0)"},
      {PluginUse::kHttp, R"({"realm": "a'b"})",
       "property \"realm\" validation failed: must not hold control characters or \"'\" (it is "
       "sent in WWW-Authenticate)"},
      {PluginUse::kConsumer, R"({"username": "foo", "password": "bar"})", ""},
      {PluginUse::kConsumer, R"({"password": "bar"})", R"(property "username" is required)"},
      {PluginUse::kConsumer, R"({"username": "foo"})", R"(property "password" is required)"},
      {PluginUse::kConsumer, R"({"username": "foo", "password": 1})",
       R"(property "password" validation failed: wrong type: expected string, got number)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(check(Json::parse(c.conf), c.use).message(), c.error) << c.conf;
  }
}

TEST(BasicAuthParse, Strict) {
  std::string buf;
  std::string_view user, pass;
  ASSERT_TRUE(parse_basic("Basic Zm9vOmJhcg==", &buf, &user, &pass));
  EXPECT_EQ(user, "foo");
  EXPECT_EQ(pass, "bar");
  ASSERT_TRUE(parse_basic("basic  Zm9vOmJhcg", &buf, &user, &pass));  // RFC 7235: any case
  EXPECT_EQ(user, "foo");
  ASSERT_TRUE(parse_basic("Basic Zm9vOmI6YXI=", &buf, &user, &pass));  // foo:b:ar
  EXPECT_EQ(user, "foo");
  EXPECT_EQ(pass, "b:ar");                                         // the first ':' splits
  ASSERT_TRUE(parse_basic("Basic OmJhcg==", &buf, &user, &pass));  // ":bar"
  EXPECT_EQ(user, "");
  EXPECT_EQ(pass, "bar");
  for (const char* bad : {"Basic", "Basic ", "Basic Zm9vYmFy",  // no colon
                          "Basic Zm9vOmJhcg=", "Basic Zm9vOmJhcg===", "Basic Zm9v OmJhcg==",
                          "Bearer Zm9vOmJhcg==", "BasicZm9vOmJhcg==", "xBasic Zm9vOmJhcg==",
                          "Basic Zm9vOmJhcg==,", "Basic Zm9vOgliYXI=",  // "foo:\tbar"
                          "Basic Zm9vOmJhcgo="}) {                      // "foo:bar\n"
    EXPECT_FALSE(parse_basic(bad, &buf, &user, &pass)) << bad;
  }
}

class BasicAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto foo = std::make_unique<plugin::Consumer>();
    foo->name = "foo";
    const plugin::Consumer& f = consumers_.add(std::move(foo));
    auto anon = std::make_unique<plugin::Consumer>();
    anon->name = "anon";
    consumers_.add(std::move(anon));
    Json conf = {{"username", "foo"}, {"password", "bar"}};
    std::vector<plugin::AuthConf> confs = {{&f.self, &conf}};
    std::vector<std::string> warnings;
    auto index = build_index(confs, &warnings);
    ASSERT_TRUE(index.is_ok());
    consumers_.set_index("basic-auth", *index);
    head_.method_text = "GET";
    head_.target = "/hello";
  }

  plugin::Action run(const Json& conf, const char* authorization) {
    head_.num_headers = 0;
    if (authorization != nullptr) {
      head_.headers[0] = {"Authorization", authorization};
      head_.num_headers = 1;
    }
    auto made = info().make(conf, plugin::BuildEnv{"route/1", shared_});
    EXPECT_TRUE(made.is_ok());
    plugin_ = *made;
    ctx_ = plugin::Context();
    ctx_.req = &head_;
    ctx_.consumers = &consumers_;
    return plugin_->rewrite(ctx_);
  }

  void expect_401(const char* authorization, std::string_view message) {
    EXPECT_EQ(run(Json::object(), authorization), plugin::Action::kReply);
    EXPECT_EQ(ctx_.reply_status, 401);
    EXPECT_EQ(ctx_.reply_body, std::string(R"({"message":")") + std::string(message) + "\"}\n");
    const std::string* www = nullptr;
    ASSERT_TRUE(ctx_.resp.headers.lookup("WWW-Authenticate", &www) && www != nullptr);
    EXPECT_EQ(*www, "Basic realm='basic'");
  }

  plugin::Consumers consumers_;
  plugin::Shared shared_;
  http::RequestHead head_;
  std::shared_ptr<const plugin::Plugin> plugin_;
  plugin::Context ctx_;
};

TEST_F(BasicAuthTest, Success) {
  ASSERT_EQ(run(Json::object(), "Basic Zm9vOmJhcg=="), plugin::Action::kContinue);
  EXPECT_EQ(ctx_.consumer, "foo");
  EXPECT_FALSE(ctx_.upstream.headers.drops("Authorization"));
  EXPECT_TRUE(ctx_.resp.headers.empty());
}

TEST_F(BasicAuthTest, Refusals) {
  expect_401(nullptr, "Missing authorization in request");
  expect_401("Basic !!!", "Invalid authorization in request");
  expect_401("Basic YmFyOmJhcg==", "Invalid user authorization");  // bar:bar, no such user
  expect_401("Basic Zm9vOmZvbw==", "Invalid user authorization");  // foo:foo, wrong password
  expect_401("Basic Zm9vOmJhcmI=", "Invalid user authorization");  // foo:barb
  expect_401("Basic Zm9vOg==", "Invalid user authorization");      // foo: (empty password)
}

TEST_F(BasicAuthTest, Realm) {
  EXPECT_EQ(run({{"realm", "gw"}}, nullptr), plugin::Action::kReply);
  const std::string* www = nullptr;
  ASSERT_TRUE(ctx_.resp.headers.lookup("WWW-Authenticate", &www) && www != nullptr);
  EXPECT_EQ(*www, "Basic realm='gw'");
}

TEST_F(BasicAuthTest, HideCredentials) {
  ASSERT_EQ(run({{"hide_credentials", true}}, "Basic Zm9vOmJhcg=="), plugin::Action::kContinue);
  EXPECT_TRUE(ctx_.upstream.headers.drops("Authorization"));
}

TEST_F(BasicAuthTest, AnonymousConsumer) {
  ASSERT_EQ(run({{"anonymous_consumer", "anon"}}, "Basic Zm9vOmZvbw=="), plugin::Action::kContinue);
  EXPECT_EQ(ctx_.consumer, "anon");
  EXPECT_TRUE(ctx_.resp.headers.empty());
  EXPECT_EQ(run({{"anonymous_consumer", "ghost"}}, nullptr), plugin::Action::kReply);
  EXPECT_EQ(ctx_.reply_body, "{\"message\":\"Invalid user authorization\"}\n");
  const std::string* www = nullptr;
  ASSERT_TRUE(ctx_.resp.headers.lookup("WWW-Authenticate", &www) && www != nullptr);
  EXPECT_EQ(*www, "Basic realm='basic'");
}

TEST_F(BasicAuthTest, NoConsumerHasBasicAuth) {
  plugin::Consumers empty;
  head_.headers[0] = {"Authorization", "Basic Zm9vOmJhcg=="};
  head_.num_headers = 1;
  auto made = info().make(Json::object(), plugin::BuildEnv{"route/1", shared_});
  ctx_ = plugin::Context();
  ctx_.req = &head_;
  ctx_.consumers = &empty;
  EXPECT_EQ((*made)->rewrite(ctx_), plugin::Action::kReply);
  EXPECT_EQ(ctx_.reply_body, "{\"message\":\"Invalid user authorization\"}\n");
}

TEST(BasicAuthIndex, LaterUsernameWinsWithAWarning) {
  plugin::Consumers consumers;
  auto a = std::make_unique<plugin::Consumer>();
  a->name = "a";
  auto b = std::make_unique<plugin::Consumer>();
  b->name = "b";
  const plugin::Consumer& ca = consumers.add(std::move(a));
  const plugin::Consumer& cb = consumers.add(std::move(b));
  Json c1 = {{"username", "u"}, {"password", "p1"}};
  Json c2 = {{"username", "u"}, {"password", "p2"}};
  std::vector<plugin::AuthConf> confs = {{&ca.self, &c1}, {&cb.self, &c2}};
  std::vector<std::string> warnings;
  auto index = build_index(confs, &warnings);
  ASSERT_TRUE(index.is_ok());
  const auto* idx = static_cast<const Index*>(index->get());
  ASSERT_NE(idx->find("u"), nullptr);
  EXPECT_EQ(idx->find("u")->secret, "p2");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("consumers a and b"), std::string::npos);
}

}  // namespace
}  // namespace sluice::plugins::basic_auth
