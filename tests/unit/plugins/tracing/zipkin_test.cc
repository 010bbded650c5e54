#include <gtest/gtest.h>

#include "plugins/tracing/zipkin_conf.h"
#include "plugins/tracing/zipkin_span.h"

namespace sluice::plugins::tracing {
namespace {

using plugin::Json;

TEST(ZipkinJson, Strings) {
  const std::pair<std::string, std::string> cases[] = {
      {"plain", R"("plain")"},
      {"a\"b\\c", R"("a\"b\\c")"},
      {std::string("\x01\n", 2), R"("\u0001\u000a")"},
      {"caf\xc3\xa9", "\"caf\xc3\xa9\""},  // valid UTF-8 kept
      {"bad\xff", R"("bad\ufffd")"},       // invalid replaced
      {"cut\xe2\x82", R"("cut\ufffd\ufffd")"},
  };
  for (const auto& [in, want] : cases) {
    std::string out;
    append_json_string(&out, in);
    EXPECT_EQ(out, want);
  }
}

TEST(ZipkinConf, TableOfErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"sample_ratio": 1})", R"(property "endpoint" is required)"},
      {R"({"endpoint": "http://a/b"})", R"(property "sample_ratio" is required)"},
      {R"({"endpoint": "http://a/b", "sample_ratio": 0})",
       R"(property "sample_ratio" validation failed: expected 0 to be at least 1e-05)"},
      {R"({"endpoint": "http://a/b", "sample_ratio": 1.5})",
       R"(property "sample_ratio" validation failed: expected 1.5 to be at most 1)"},
      {R"({"endpoint": "http://a/b", "sample_ratio": 1, "span_version": "2"})",
       R"(property "span_version" validation failed: matches none of the enum values)"},
      {R"({"endpoint": 1, "sample_ratio": 1})",
       R"(property "endpoint" validation failed: wrong type: expected string, got number)"},
  };
  for (const auto& [conf, error] : cases) {
    auto c = parse_zipkin(Json::parse(conf));
    ASSERT_FALSE(c.is_ok()) << conf;
    EXPECT_EQ(c.status().message(), error) << conf;
  }
  auto ok = parse_zipkin(Json::parse(
      R"({"endpoint": "https://z.example:9411/api/v2/spans", "sample_ratio": 0.5,
          "server_addr": "10.1.2.3", "span_version": 2})"));
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_TRUE(ok->endpoint.https);
  EXPECT_EQ(ok->endpoint.port, 9411);
  EXPECT_EQ(ok->endpoint.path, "/api/v2/spans");
  EXPECT_EQ(ok->service_name, "APISIX");
}

}  // namespace
}  // namespace sluice::plugins::tracing
