// jwt-auth's rewrite hook on fake requests, with consumers built by hand: where the token is
// found, APISIX's 401 messages, the consumer's algorithm deciding (alg none, HS/RS confusion),
// exp/nbf with the grace period, hide_credentials and anonymous_consumer.

#include "plugins/jwt_auth/jwt_auth.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "unit/plugins/jwt_auth/vectors.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::jwt_auth {
namespace {

using namespace vectors;  // NOLINT: test vectors

using plugin::Action;
using plugin::Json;
using Headers = std::initializer_list<std::pair<std::string_view, std::string_view>>;

const char* token(std::string_view name) {
  for (const Vector& v : kVectors) {
    if (name == v.name) {
      return v.token;
    }
  }
  ADD_FAILURE() << name;
  return "";
}

// Consumers: jack (HS256, "user-key"), and one per asymmetric algorithm (key "<alg>-key").
struct World {
  plugin::Consumers consumers;
  std::vector<Json> confs;
  std::vector<std::string> warnings;

  World(int64_t grace = 0) {
    confs.push_back({{"key", "user-key"}, {"secret", kSecret}, {"lifetime_grace_period", grace}});
    add("jack");
    confs.push_back({{"key", "rs-key"}, {"algorithm", "RS256"}, {"public_key", kPem_rsa}});
    add("rs");
    confs.push_back({{"key", "anon-key"}, {"secret", "x"}});
    add("anon");
    std::vector<plugin::AuthConf> acs;
    for (size_t i = 0; i < confs.size(); ++i) {
      acs.push_back({&consumers.find(names[i])->self, &confs[i]});
    }
    auto index = Index::build(acs, &warnings);
    EXPECT_TRUE(index.is_ok()) << index.status().message();
    consumers.set_index("jwt-auth", *index);
  }
  void add(const char* name) {
    auto c = std::make_unique<plugin::Consumer>();
    c->name = name;
    consumers.add(std::move(c));
    names.push_back(name);
  }
  std::vector<std::string> names;
};

struct Answer {
  Action action;
  int status = 0;
  std::string body;
  std::string consumer;
  std::string upstream_uri;
  plugin::HeaderEdits headers;
};

Answer run(const World& w, const char* route_conf, std::string_view target, Headers headers) {
  auto conf = parse_route(Json::parse(route_conf));
  EXPECT_TRUE(conf.is_ok()) << conf.status().message();
  JwtAuth p(std::move(conf).value());
  router::testing::FakeRequest req("GET", target, "foo.com", headers);
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.consumers = &w.consumers;
  Answer a;
  a.action = p.rewrite(ctx);
  a.status = ctx.reply_status;
  a.body = ctx.reply_body;
  a.consumer = std::string(ctx.consumer);
  a.upstream_uri = ctx.upstream.uri;
  a.headers = ctx.upstream.headers;
  return a;
}

std::string edited(const plugin::HeaderEdits& h, std::string_view name) {
  const std::string* v = nullptr;
  if (!h.lookup(name, &v)) {
    return "(none)";
  }
  return v == nullptr ? "(removed)" : *v;
}

std::string body(std::string_view message) { return Json{{"message", message}}.dump() + "\n"; }

TEST(JwtAuth, FindsTheTokenInHeaderQueryCookie) {
  World w;
  const std::string t = token("HS256");
  const std::string bearer = "Bearer " + t, lower = "bearer " + t, cookie = "a=1; jwt=" + t;
  const std::string query = "/?a=1&jwt=" + t;
  struct {
    std::string_view target, name, value;
  } cases[] = {{"/", "Authorization", t},
               {"/", "authorization", bearer},
               {"/", "Authorization", lower},
               {query, "X-None", "1"},
               {"/", "Cookie", cookie}};
  for (const auto& c : cases) {
    Answer a = run(w, "{}", c.target, {{c.name, c.value}});
    EXPECT_EQ(a.action, Action::kContinue) << c.target << " " << c.name << ": " << a.body;
    EXPECT_EQ(a.consumer, "jack");
    EXPECT_EQ(edited(a.headers, "X-Consumer-Username"), "jack");
  }
  // The header wins over the query even when the header's token is bad (APISIX's order).
  Answer a = run(w, "{}", "/?jwt=" + t, {{"Authorization", "junk"}});
  EXPECT_EQ(a.body, body("JWT token invalid"));
  // Custom places.
  a = run(w, R"({"header": "x-jwt", "query": "tok", "cookie": "c"})", "/", {{"Cookie", "c=" + t}});
  EXPECT_EQ(a.consumer, "jack");
}

TEST(JwtAuth, ApisixMessages) {
  World w;
  struct {
    const char* token;
    const char* message;
  } cases[] = {
      {nullptr, "Missing JWT token in request"},
      {"junk", "JWT token invalid"},
      {"alg_none", "failed to verify jwt"},
      {"no_key", "missing user key in JWT token"},
      {"sub_key", "missing user key in JWT token"},
      {"other_key", "Invalid user key in JWT token"},
      {"confusion", "failed to verify jwt"},  // HS256 for the RS256 consumer rs-key
      {"expired", "failed to verify jwt"},
      {"nbf_future", "ok"},  // nbf is kNow + 10: long past by the wall clock
      {"exp_string", "failed to verify jwt"},
  };
  for (const auto& c : cases) {
    std::string t = c.token == nullptr ? "" : c.token;
    if (t != "junk" && !t.empty()) {
      t = token(c.token);
    }
    Answer a = t.empty() ? run(w, "{}", "/", {}) : run(w, "{}", "/", {{"Authorization", t}});
    if (std::string_view(c.message) == "ok") {
      EXPECT_EQ(a.action, Action::kContinue) << c.token << ": " << a.body;
      continue;
    }
    EXPECT_EQ(a.action, Action::kReply) << (c.token ? c.token : "none");
    EXPECT_EQ(a.status, 401);
    EXPECT_EQ(a.body, body(c.message)) << (c.token ? c.token : "none");
  }
}

TEST(JwtAuth, ConsumerAlgorithmDecides) {
  World w;
  JwtAuth p(*parse_route(Json::object()));
  struct {
    const char* token;
    const char* why;
  } cases[] = {
      // PyJWT's RS256 token names user-key (jack, HS256): a good signature, not jack's alg.
      {"RS256", "the token's alg is not the consumer's HS256"},
      // HS256 signed with the RS256 consumer's public key PEM as the secret.
      {"confusion", "the token's alg is not the consumer's RS256"},
      {"alg_none", "the token's alg is not the consumer's HS256"},
  };
  for (const auto& c : cases) {
    router::testing::FakeRequest req("GET", "/", "", {{"Authorization", token(c.token)}});
    plugin::Context ctx;
    ctx.req = &req.head;
    ctx.consumers = &w.consumers;
    std::string_view message;
    std::string why;
    EXPECT_EQ(p.authenticate(ctx, kNow, &message, &why), nullptr) << c.token;
    EXPECT_EQ(message, "failed to verify jwt");
    EXPECT_EQ(why, c.why);
  }
}

TEST(JwtAuth, GracePeriod) {
  for (int64_t grace : {0, 9, 11}) {
    World w(grace);
    JwtAuth p(*parse_route(Json::object()));
    for (const char* name : {"expired", "nbf_future"}) {
      router::testing::FakeRequest req("GET", "/", "", {{"Authorization", token(name)}});
      plugin::Context ctx;
      ctx.req = &req.head;
      ctx.consumers = &w.consumers;
      std::string_view message;
      std::string why;
      bool ok = p.authenticate(ctx, kNow, &message, &why) != nullptr;
      EXPECT_EQ(ok, grace > 10) << name << " grace " << grace << ": " << why;
    }
  }
  // claims_to_verify: [] checks neither.
  World w;
  JwtAuth p(*parse_route(Json::parse(R"({"claims_to_verify": []})")));
  router::testing::FakeRequest req("GET", "/", "", {{"Authorization", token("expired")}});
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.consumers = &w.consumers;
  std::string_view message;
  std::string why;
  EXPECT_NE(p.authenticate(ctx, kNow, &message, &why), nullptr);
}

TEST(JwtAuth, HideCredentials) {
  World w;
  const std::string t = token("HS256");
  const char* hide = R"({"hide_credentials": true})";
  Answer a = run(w, hide, "/p", {{"Authorization", "Bearer " + t}});
  EXPECT_EQ(edited(a.headers, "authorization"), "(removed)");
  a = run(w, hide, "/p?a=1&jwt=" + t + "&b=2&jwt=x", {});
  EXPECT_EQ(a.consumer, "jack");
  EXPECT_EQ(a.upstream_uri, "/p?a=1&b=2");
  a = run(w, hide, "/p?jwt=" + t, {});
  EXPECT_EQ(a.upstream_uri, "/p");
  a = run(w, hide, "/", {{"Cookie", "a=1; jwt=" + t + "; b=2"}});
  EXPECT_EQ(edited(a.headers, "Cookie"), "a=1; b=2");
  a = run(w, hide, "/", {{"Cookie", "jwt=" + t}});
  EXPECT_EQ(edited(a.headers, "Cookie"), "(removed)");
  // Without hide_credentials nothing changes.
  a = run(w, "{}", "/p?jwt=" + t, {{"Cookie", "x=1"}});
  EXPECT_EQ(a.upstream_uri, "");
  EXPECT_EQ(edited(a.headers, "Cookie"), "(none)");
}

TEST(JwtAuth, AnonymousConsumer) {
  World w;
  Answer a = run(w, R"({"anonymous_consumer": "anon"})", "/", {});
  EXPECT_EQ(a.action, Action::kContinue);
  EXPECT_EQ(a.consumer, "anon");
  a = run(w, R"({"anonymous_consumer": "ghost"})", "/", {});
  EXPECT_EQ(a.action, Action::kReply);
  EXPECT_EQ(a.body, body("Invalid user authorization"));
}

TEST(JwtAuth, NoIndexAndDuplicateKeys) {
  plugin::Consumers none;
  JwtAuth p(*parse_route(Json::object()));
  router::testing::FakeRequest req("GET", "/", "", {{"Authorization", token("HS256")}});
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.consumers = &none;
  EXPECT_EQ(p.rewrite(ctx), Action::kReply);
  EXPECT_EQ(ctx.reply_body, body("Invalid user key in JWT token"));

  plugin::Consumers cs;
  for (const char* n : {"a", "b"}) {
    auto c = std::make_unique<plugin::Consumer>();
    c->name = n;
    cs.add(std::move(c));
  }
  Json ca = {{"key", "user-key"}, {"secret", "wrong"}};
  Json cb = {{"key", "user-key"}, {"secret", kSecret}};
  std::vector<plugin::AuthConf> acs = {{&cs.find("a")->self, &ca}, {&cs.find("b")->self, &cb}};
  std::vector<std::string> warnings;
  auto index = Index::build(acs, &warnings);
  ASSERT_TRUE(index.is_ok());
  EXPECT_EQ((*index)->size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "jwt-auth: consumer b has the key \"user-key\" of consumer a, and "
            "replaces it");
  cs.set_index("jwt-auth", *index);
  plugin::Context ctx2;
  ctx2.req = &req.head;
  ctx2.consumers = &cs;
  EXPECT_EQ(p.rewrite(ctx2), Action::kContinue);
  EXPECT_EQ(ctx2.consumer, "b");
}

}  // namespace
}  // namespace sluice::plugins::jwt_auth
