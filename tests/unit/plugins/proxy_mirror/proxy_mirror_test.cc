// proxy-mirror: APISIX's schema texts, what Sluice refuses on top (grpc), the mirror's target
// as APISIX composes it (path_concat_mode), and the copy of the request it sends.

#include "plugins/proxy_mirror/proxy_mirror.h"

#include <gtest/gtest.h>

#include <string>

#include "plugins/proxy_mirror/config.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::proxy_mirror {
namespace {

using plugin::Json;

constexpr const char* kHostPattern =
    R"("^(http(s)?|grpc(s)?):\\/\\/([\\da-zA-Z.-]+|\\[[\\da-fA-F:]+\\])(:\\d+)?$")";

TEST(ProxyMirrorConfig, Info) {
  EXPECT_EQ(info().name, "proxy-mirror");
  EXPECT_EQ(info().priority, 1010);
  Json schema = Json::parse(info().schema);
  EXPECT_EQ(schema["required"], Json::parse(R"(["host"])"));
  EXPECT_EQ(schema["properties"]["sample_ratio"]["minimum"], 0.00001);
  EXPECT_EQ(schema["properties"]["path_concat_mode"]["default"], "replace");
}

TEST(ProxyMirrorConfig, SchemaTexts) {
  struct Case {
    const char* conf;
    std::string error;
  };
  const Case cases[] = {
      {R"({"host":"http://127.0.0.1:1986"})", ""},
      {R"({"host":"https://mirror.example.com"})", ""},
      {R"({"host":"http://[::1]:1986","path":"/a/b","path_concat_mode":"prefix"})", ""},
      {R"({"host":"http://127.0.0.1","sample_ratio":0.5})", ""},
      {R"({})", R"(property "host" is required)"},
      {R"({"host":1})",
       R"(property "host" validation failed: wrong type: expected string, got number)"},
      {R"({"host":"127.0.0.1:1986"})",
       std::string(R"(property "host" validation failed: failed to match pattern )") +
           kHostPattern + R"( with "127.0.0.1:1986")"},
      {R"({"host":"http://127.0.0.1:1986/"})",
       std::string(R"(property "host" validation failed: failed to match pattern )") +
           kHostPattern + R"( with "http://127.0.0.1:1986/")"},
      {R"({"host":"http://a","path":"a"})",
       R"(property "path" validation failed: failed to match pattern "^/[^?&]+$" with "a")"},
      {R"({"host":"http://a","path":"/a?b"})",
       R"(property "path" validation failed: failed to match pattern "^/[^?&]+$" with "/a?b")"},
      {R"({"host":"http://a","path_concat_mode":"append"})",
       R"(property "path_concat_mode" validation failed: matches none of the enum values)"},
      {R"({"host":"http://a","sample_ratio":0})",
       R"(property "sample_ratio" validation failed: expected 0 to be at least 1e-05)"},
      {R"({"host":"http://a","sample_ratio":2})",
       R"(property "sample_ratio" validation failed: expected 2 to be at most 1)"},
      {R"({"host":"grpc://127.0.0.1:1986"})",
       R"(property "host" validation failed: grpc mirrors are not supported by Sluice (http and https are))"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(check(Json::parse(c.conf), plugin::PluginUse::kHttp).message(), c.error) << c.conf;
  }
}

TEST(ProxyMirrorConfig, ParsesSchemeHostAndPort) {
  auto c = parse(Json::parse(R"({"host":"https://[::1]"})"));
  ASSERT_TRUE(c.is_ok());
  EXPECT_TRUE(c->https);
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->port, 443);
  c = parse(Json::parse(R"({"host":"http://mirror.local:8081"})"));
  ASSERT_TRUE(c.is_ok());
  EXPECT_FALSE(c->https);
  EXPECT_EQ(c->host, "mirror.local");
  EXPECT_EQ(c->port, 8081);
  EXPECT_FALSE(parse(Json::parse(R"({"host":"http://a:70000"})")).is_ok());
}

TEST(ProxyMirrorTarget, PathConcatModes) {
  std::string out;
  Conf none;
  mirror_target(none, "/hello", "a=1", &out);
  EXPECT_EQ(out, "/hello?a=1");
  Conf replace;
  replace.path = "/mirror";
  mirror_target(replace, "/hello", "a=1", &out);
  EXPECT_EQ(out, "/mirror?a=1");
  mirror_target(replace, "/hello", "", &out);
  EXPECT_EQ(out, "/mirror");
  Conf prefix = replace;
  prefix.prefix = true;
  mirror_target(prefix, "/hello", "a=1", &out);
  EXPECT_EQ(out, "/mirror/hello?a=1");
}

TEST(ProxyMirrorCopy, CarriesMethodTargetHeadersAndBodyButNotTheHopFields) {
  auto conf = parse(Json::parse(R"({"host":"http://127.0.0.1:1986","path":"/m"})"));
  ASSERT_TRUE(conf.is_ok());
  ProxyMirror pm(*conf, resolve_peer(*conf));
  router::testing::FakeRequest req("POST", "/hello?x=1", "api.example.com",
                                   {{"Host", "api.example.com"},
                                    {"X-Trace", "7"},
                                    {"Connection", "keep-alive"},
                                    {"Content-Length", "4"}});
  req.head.body_kind = http::BodyKind::kLength;
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.request_body = "ping";
  MirrorCopy copy = pm.copy_of(ctx);
  EXPECT_EQ(copy.method, "POST");
  EXPECT_EQ(copy.target, "/m?x=1");
  EXPECT_EQ(copy.host, "api.example.com");
  ASSERT_EQ(copy.fields.size(), 1u);
  EXPECT_EQ(copy.fields[0].first, "X-Trace");
  EXPECT_TRUE(copy.has_body);
  EXPECT_EQ(copy.body, "ping");
  // proxy-rewrite's Host goes to the mirror too, as $upstream_host does in APISIX.
  ctx.upstream.host = "rewritten";
  EXPECT_EQ(pm.copy_of(ctx).host, "rewritten");
}

}  // namespace
}  // namespace sluice::plugins::proxy_mirror
