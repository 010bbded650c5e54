// cors: the conf's texts (schema, the credential rule, regexes) and the headers a request gets.

#include "plugins/cors/cors.h"

#include <gtest/gtest.h>

#include <string>

#include "unit/router/fake_request.h"

namespace sluice::plugins::cors {
namespace {

using plugin::Json;

std::string error_of(const char* conf) {
  auto c = parse(Json::parse(conf));
  return c.is_ok() ? "" : c.status().message();
}

TEST(CorsConf, CredentialRefusesStar) {
  const char* kText = "you can not set '*' for other option when 'allow_credential' is true";
  EXPECT_EQ(error_of(R"({"allow_credential": true})"), kText);
  EXPECT_EQ(error_of(R"({"allow_credential": true, "allow_origins": "http://a.com",
                         "allow_methods": "GET", "allow_headers": "*", "expose_headers": "x"})"),
            kText);
  EXPECT_EQ(error_of(R"({"allow_credential": true, "allow_origins": "http://a.com",
                         "allow_methods": "GET", "allow_headers": "h", "expose_headers": "*"})"),
            kText);
  EXPECT_EQ(error_of(R"({"allow_credential": true, "allow_origins": "**",
                         "allow_methods": "**", "allow_headers": "**", "expose_headers": "x",
                         "timing_allow_origins": "*"})"),
            kText);
  EXPECT_EQ(error_of(R"({"allow_credential": true, "allow_origins": "**",
                         "allow_methods": "**", "allow_headers": "**", "expose_headers": "x"})"),
            "");
}

TEST(CorsConf, SchemaTexts) {
  const std::string pattern = R"("^(\*|\*\*|null|\w+://[^,]+(,\w+://[^,]+)*)$")";
  const std::pair<const char*, std::string> cases[] = {
      {R"({"allow_origins": "a.com"})",
       "property \"allow_origins\" validation failed: failed to match pattern " + pattern +
           " with \"a.com\""},
      {R"({"allow_origins": "http://a.com,"})",
       "property \"allow_origins\" validation failed: failed to match pattern " + pattern +
           " with \"http://a.com,\""},
      {R"({"max_age": "5"})",
       R"(property "max_age" validation failed: wrong type: expected integer, got string)"},
      {R"({"allow_credential": 1})",
       R"(property "allow_credential" validation failed: wrong type: expected boolean, got number)"},
      {R"({"allow_origins_by_regex": []})",
       R"(property "allow_origins_by_regex" validation failed: expect array to have at least 1 items)"},
      {R"({"allow_origins_by_regex": ["a", "a"]})",
       R"(property "allow_origins_by_regex" validation failed: expected unique items but items 1 and 2 are equal)"},
      {R"({"allow_origins_by_regex": [""]})",
       R"(property "allow_origins_by_regex" validation failed: failed to validate item 1: string too short, expected at least 1, got 0)"},
      {R"({"allow_origins_by_regex": ["(a"]})",
       R"(pcre2_compile() failed: missing closing parenthesis in "(a")"},
      {R"({"timing_allow_origins_by_regex": ["[a"]})",
       R"(pcre2_compile() failed: missing terminating ] for character class in "[a")"},
  };
  for (const auto& [conf, text] : cases) {
    EXPECT_EQ(error_of(conf), text) << conf;
  }
  EXPECT_EQ(error_of(R"({"allow_origins_by_metadata": []})"),
            R"(property "allow_origins_by_metadata" validation failed: expect array to have at )"
            R"(least 1 items)");
  EXPECT_EQ(error_of(R"({"allow_origins_by_metadata": ["k", "k"]})"),
            R"(property "allow_origins_by_metadata" validation failed: expected unique items )"
            R"(but items 1 and 2 are equal)");
  EXPECT_EQ(error_of(R"({"allow_origins_by_metadata": ["EXAMPLE"]})"), "");
}

TEST(CorsConf, OriginsPattern) {
  for (const char* ok :
       {"*", "**", "null", "http://a.com", "https://a.com:8081,http://b.c", "a_1://x"}) {
    EXPECT_TRUE(origins_pattern(ok)) << ok;
  }
  for (const char* bad : {"", "***", "a.com", "http://", "http://a,,http://b", "://a", "-://a",
                          "null,http://a.com"}) {
    EXPECT_FALSE(origins_pattern(bad)) << bad;
  }
}

TEST(CorsConf, Metadata) {
  EXPECT_TRUE(check(Json::parse(R"({"allow_origins": {"EXAMPLE": "https://example.com"}})"),
                    plugin::PluginUse::kMetadata)
                  .is_ok());
  EXPECT_EQ(
      check(Json::parse(R"({"allow_origins": {"K": "example.com"}})"), plugin::PluginUse::kMetadata)
          .message(),
      R"(property "allow_origins" validation failed: property "K" validation failed: )"
      R"(failed to match pattern "^(\*|\*\*|null|\w+://[^,]+(,\w+://[^,]+)*)$" with )"
      R"("example.com")");
}

struct Result {
  plugin::Action action;
  plugin::Context ctx;
};

const std::string* edit(const plugin::Context& ctx, std::string_view name) {
  const std::string* v = nullptr;
  return ctx.resp.headers.lookup(name, &v) ? v : nullptr;
}

std::string header(const plugin::Context& ctx, std::string_view name) {
  const std::string* v = edit(ctx, name);
  return v == nullptr ? "<none>" : *v;
}

// Runs the plugin on one request and returns its context.
void run(const char* conf, const char* method,
         std::initializer_list<std::pair<std::string_view, std::string_view>> headers,
         plugin::Context* ctx, plugin::Action* action) {
  auto c = parse(Json::parse(conf));
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  Cors p(std::move(c).value());
  router::testing::FakeRequest req(method, "/hello", "a.com", headers);
  ctx->req = &req.head;
  *action = p.rewrite(*ctx);
  ctx->req = nullptr;
}

TEST(Cors, DefaultsOnAnyRequest) {
  plugin::Context ctx;
  plugin::Action a;
  run("{}", "GET", {}, &ctx, &a);
  EXPECT_EQ(a, plugin::Action::kContinue);
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Methods"), "*");
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Headers"), "*");
  EXPECT_EQ(header(ctx, "Access-Control-Expose-Headers"), "*");
  EXPECT_EQ(header(ctx, "Access-Control-Max-Age"), "5");
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Credentials"), "<none>");
  EXPECT_EQ(header(ctx, "Vary"), "<none>");
}

TEST(Cors, PreflightIsAnsweredWith200) {
  plugin::Context ctx;
  plugin::Action a;
  run("{}", "OPTIONS", {{"Origin", "http://x.com"}, {"Access-Control-Request-Method", "PUT"}}, &ctx,
      &a);
  EXPECT_EQ(a, plugin::Action::kReply);
  EXPECT_EQ(ctx.reply_status, 200);
  EXPECT_EQ(ctx.reply_body, "");
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Origin"), "*");
}

TEST(Cors, OriginList) {
  const char* conf = R"({"allow_origins": "http://sub.domain.com,http://sub2.domain.com",
      "allow_methods": "GET,POST", "allow_headers": "headr1,headr2",
      "expose_headers": "ex-headr1,ex-headr2", "max_age": 50, "allow_credential": true})";
  plugin::Context ctx;
  plugin::Action a;
  run(conf, "GET", {{"Origin", "http://sub2.domain.com"}}, &ctx, &a);
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Origin"), "http://sub2.domain.com");
  EXPECT_EQ(header(ctx, "Vary"), "Origin");
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Methods"), "GET,POST");
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Headers"), "headr1,headr2");
  EXPECT_EQ(header(ctx, "Access-Control-Expose-Headers"), "ex-headr1,ex-headr2");
  EXPECT_EQ(header(ctx, "Access-Control-Max-Age"), "50");
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Credentials"), "true");
  plugin::Context other;
  run(conf, "GET", {{"Origin", "http://sub3.domain.com"}}, &other, &a);
  EXPECT_TRUE(other.resp.headers.empty());
  plugin::Context none;
  run(conf, "GET", {}, &none, &a);
  EXPECT_TRUE(none.resp.headers.empty());
}

TEST(Cors, SingleOriginMustBeTheRequests) {
  plugin::Context ctx;
  plugin::Action a;
  run(R"({"allow_origins": "http://a.com"})", "GET", {{"Origin", "http://b.com"}}, &ctx, &a);
  EXPECT_TRUE(ctx.resp.headers.empty());
  plugin::Context ok;
  run(R"({"allow_origins": "http://a.com"})", "GET", {{"Origin", "http://a.com"}}, &ok, &a);
  EXPECT_EQ(header(ok, "Access-Control-Allow-Origin"), "http://a.com");
}

TEST(Cors, DoubleStarEchoes) {
  const char* conf = R"({"allow_origins": "**", "allow_methods": "**", "allow_headers": "**",
      "expose_headers": "x-a", "allow_credential": true})";
  plugin::Context ctx;
  plugin::Action a;
  run(conf, "GET", {{"Origin", "http://x.org"}, {"Access-Control-Request-Headers", "h1, h2"}}, &ctx,
      &a);
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Origin"), "http://x.org");
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Methods"),
            "GET,POST,PUT,DELETE,PATCH,HEAD,OPTIONS,CONNECT,TRACE");
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Headers"), "h1, h2");
  // No Origin: `*`; no Access-Control-Request-Headers: the header is removed.
  plugin::Context bare;
  run(conf, "GET", {}, &bare, &a);
  EXPECT_EQ(header(bare, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(header(bare, "Vary"), "<none>");
  EXPECT_TRUE(bare.resp.headers.drops("access-control-allow-headers"));
}

TEST(Cors, RegexReplacesTheList) {
  const char* conf =
      R"({"allow_methods": "GET,POST", "allow_origins_by_regex": [".*\\.test.com$"]})";
  plugin::Context ctx;
  plugin::Action a;
  run(conf, "GET", {{"Origin", "http://a.test.com"}}, &ctx, &a);
  EXPECT_EQ(header(ctx, "Access-Control-Allow-Origin"), "http://a.test.com");
  EXPECT_EQ(header(ctx, "Vary"), "Origin");
  plugin::Context no;
  run(conf, "GET", {{"Origin", "http://a.test2.com"}}, &no, &a);
  EXPECT_TRUE(no.resp.headers.empty());  // allow_origins' default `*` is not consulted
  plugin::Context none;
  run(conf, "GET", {}, &none, &a);
  EXPECT_TRUE(none.resp.headers.empty());
}

TEST(Cors, TimingAllowOrigin) {
  plugin::Context ctx;
  plugin::Action a;
  run(R"({"timing_allow_origins": "http://a.com,http://b.com"})", "GET",
      {{"Origin", "http://b.com"}}, &ctx, &a);
  EXPECT_EQ(header(ctx, "Timing-Allow-Origin"), "http://b.com");
  plugin::Context no;
  run(R"({"timing_allow_origins": "http://a.com,http://b.com"})", "GET",
      {{"Origin", "http://c.com"}}, &no, &a);
  EXPECT_EQ(header(no, "Timing-Allow-Origin"), "<none>");
  EXPECT_EQ(header(no, "Access-Control-Allow-Origin"), "*");
  plugin::Context re;
  run(R"({"timing_allow_origins_by_regex": ["^http://t\\."]})", "GET", {{"Origin", "http://t.com"}},
      &re, &a);
  EXPECT_EQ(header(re, "Timing-Allow-Origin"), "http://t.com");
  plugin::Context unset;
  run("{}", "GET", {{"Origin", "http://t.com"}}, &unset, &a);
  EXPECT_EQ(header(unset, "Timing-Allow-Origin"), "<none>");
}

// allow_origins_by_metadata through the factory, as the snapshot builder makes the plugin:
// the origins come from the plugin_metadata lent to it.
std::string origin_with_metadata(const char* conf, const char* metadata, const char* origin) {
  plugin::Shared shared;
  std::unordered_map<std::string, Json> by_plugin;
  if (metadata != nullptr) {
    by_plugin.emplace("cors", Json::parse(metadata));
  }
  shared.metadata = &by_plugin;
  auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared});
  EXPECT_TRUE(p.is_ok());
  EXPECT_EQ(shared.metadata_reads, std::vector<std::string>{"cors"});
  router::testing::FakeRequest req(
      "GET", "/hello", "a.com",
      origin == nullptr ? std::initializer_list<std::pair<std::string_view, std::string_view>>{}
                        : std::initializer_list<std::pair<std::string_view, std::string_view>>{
                              {"Origin", origin}});
  plugin::Context ctx;
  ctx.req = &req.head;
  static_cast<const Cors&>(**p).rewrite(ctx);
  ctx.req = nullptr;
  return header(ctx, "Access-Control-Allow-Origin") + "|" + header(ctx, "Vary");
}

TEST(Cors, OriginsByMetadata) {
  // APISIX's documented metadata; the route names key_1 only and keeps allow_origins `*`.
  const char* meta = R"({"allow_origins": {"key_1": "https://domain.com",
      "key_2": "https://sub.domain.com,https://sub2.domain.com", "key_3": "*"}})";
  const char* conf = R"({"allow_origins_by_metadata": ["key_1"]})";
  EXPECT_EQ(origin_with_metadata(conf, meta, "https://domain.com"), "https://domain.com|Origin");
  EXPECT_EQ(origin_with_metadata(conf, meta, "https://sub.domain.com"), "<none>|<none>");
  EXPECT_EQ(origin_with_metadata(conf, meta, nullptr), "<none>|<none>");
  // A list and `*` each admit the request's Origin itself, in the conf's key order.
  const char* both = R"({"allow_origins_by_metadata": ["key_2", "key_3"]})";
  EXPECT_EQ(origin_with_metadata(both, meta, "https://sub2.domain.com"),
            "https://sub2.domain.com|Origin");
  EXPECT_EQ(origin_with_metadata(both, meta, "http://any.org"), "http://any.org|Origin");
  // A key the metadata lacks, or no metadata at all, admits nothing.
  EXPECT_EQ(origin_with_metadata(R"({"allow_origins_by_metadata": ["nope"]})", meta,
                                 "https://domain.com"),
            "<none>|<none>");
  EXPECT_EQ(origin_with_metadata(conf, nullptr, "https://domain.com"), "<none>|<none>");
  EXPECT_EQ(origin_with_metadata(conf, R"({})", "https://domain.com"), "<none>|<none>");
}

TEST(Cors, OwnOriginsAfterTheMetadataUnlessStar) {
  const char* meta = R"({"allow_origins": {"k": "https://domain.com"}})";
  const char* own = R"({"allow_origins_by_metadata": ["k"], "allow_origins": "http://own.com"})";
  EXPECT_EQ(origin_with_metadata(own, meta, "https://domain.com"), "https://domain.com|Origin");
  EXPECT_EQ(origin_with_metadata(own, meta, "http://own.com"), "http://own.com|Origin");
  EXPECT_EQ(origin_with_metadata(own, meta, "http://other.com"), "<none>|<none>");
  const char* regex = R"({"allow_origins_by_metadata": ["k"], "allow_origins": "http://own.com",
      "allow_origins_by_regex": [".*\\.test\\.com$"]})";
  EXPECT_EQ(origin_with_metadata(regex, meta, "http://a.test.com"), "http://a.test.com|Origin");
  // allow_origins `*` (the default) is not a fallback once the metadata is asked.
  const char* star = R"({"allow_origins_by_metadata": ["k"],
      "allow_origins_by_regex": [".*\\.test\\.com$"]})";
  EXPECT_EQ(origin_with_metadata(star, meta, "http://a.test.com"), "<none>|<none>");
}

TEST(Cors, NoMetadataReadWithoutTheField) {
  plugin::Shared shared;
  auto p = info().make(Json::parse("{}"), plugin::BuildEnv{"route/1", shared});
  ASSERT_TRUE(p.is_ok());
  EXPECT_TRUE(shared.metadata_reads.empty());  // its chain stays cached across metadata changes
}

}  // namespace
}  // namespace sluice::plugins::cors
