// public-api: the conf's texts and the 404 for what names no plugin API. The answer itself
// crosses to the control thread and back; tests/integration/test_plugins_public_api.py runs it.

#include "plugins/public_api/public_api.h"

#include <gtest/gtest.h>

#include "unit/router/fake_request.h"

namespace sluice::plugins::public_api {
namespace {

using plugin::Json;

TEST(PublicApiConf, Texts) {
  EXPECT_TRUE(parse(Json::object()).is_ok());
  EXPECT_EQ(*parse(Json::parse(R"({"uri": "/apisix/prometheus/metrics"})"))->uri,
            "/apisix/prometheus/metrics");
  EXPECT_EQ(parse(Json::parse(R"({"uri": 1})")).status().message(),
            R"(property "uri" validation failed: wrong type: expected string, got number)");
  EXPECT_EQ(parse(Json::parse(R"({"category": []})")).status().message(),
            R"(property "category" validation failed: wrong type: expected string, got table)");
}

plugin::Action run(const PublicApi& p, const char* method, const char* target,
                   plugin::Context* ctx) {
  router::testing::FakeRequest req(method, target, "a.com");
  ctx->req = &req.head;
  ctx->match = req.ctx;
  return p.access(*ctx);
}

TEST(PublicApi, UnknownUriIs404) {
  auto apis = std::make_shared<ApiRegistry>();
  apis->apis.push_back(
      {"/apisix/prometheus/metrics", "text/plain", [] { return std::optional<std::string>("x"); }});
  // No control loop in this test: only the refusals are reached.
  PublicApi routed(Conf{}, apis);
  plugin::Context ctx;
  EXPECT_EQ(run(routed, "GET", "/other", &ctx), plugin::Action::kReply);
  EXPECT_EQ(ctx.reply_status, 404);
  PublicApi named(Conf{"/apisix/nothing"}, apis);
  plugin::Context ctx2;
  EXPECT_EQ(run(named, "GET", "/apisix/prometheus/metrics", &ctx2), plugin::Action::kReply);
  EXPECT_EQ(ctx2.reply_status, 404);
  PublicApi none(Conf{}, nullptr);
  plugin::Context ctx3;
  EXPECT_EQ(run(none, "GET", "/apisix/prometheus/metrics", &ctx3), plugin::Action::kReply);
  EXPECT_EQ(ctx3.reply_status, 404);
}

TEST(PublicApi, OnlyGet) {
  auto apis = std::make_shared<ApiRegistry>();
  apis->apis.push_back({"/m", "text/plain", [] { return std::optional<std::string>("x"); }});
  PublicApi p(Conf{}, apis);
  plugin::Context ctx;
  EXPECT_EQ(run(p, "POST", "/m", &ctx), plugin::Action::kReply);
  EXPECT_EQ(ctx.reply_status, 404);
}

}  // namespace
}  // namespace sluice::plugins::public_api
