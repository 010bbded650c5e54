#include "plugins/tracing/otel_conf.h"

#include <gtest/gtest.h>

namespace sluice::plugins::tracing {
namespace {

using plugin::Json;

TEST(OtelConf, TableOfErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"sampler": {"name": "sometimes"}})",
       R"(property "sampler" validation failed: property "name" validation failed: matches none of the enum values)"},
      {R"({"sampler": 1})",
       R"(property "sampler" validation failed: wrong type: expected object, got number)"},
      {R"({"sampler": {"name": "trace_id_ratio", "options": {"fraction": "x"}}})",
       R"(property "sampler" validation failed: property "options" validation failed: property "fraction" validation failed: wrong type: expected number, got string)"},
      {R"({"sampler": {"name": "parent_base", "options": {"root": {"name": "parent_base"}}}})",
       R"(property "sampler" validation failed: property "options" validation failed: property "root" validation failed: property "name" validation failed: matches none of the enum values)"},
      {R"({"additional_attributes": [""]})",
       R"(property "additional_attributes" validation failed: failed to validate item 1: string too short, expected at least 1, got 0)"},
      {R"({"additional_header_prefix_attributes": "x-*"})",
       R"(property "additional_header_prefix_attributes" validation failed: wrong type: expected array, got string)"},
  };
  for (const auto& [conf, error] : cases) {
    auto c = parse_otel(Json::parse(conf));
    ASSERT_FALSE(c.is_ok()) << conf;
    EXPECT_EQ(c.status().message(), error) << conf;
  }
  auto ok = parse_otel(Json::parse(
      R"({"sampler": {"name": "parent_base", "options": {"root": {"name": "trace_id_ratio",
          "options": {"fraction": 0.5}}}}, "additional_header_prefix_attributes": ["X-Foo-*", "ua"]})"));
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(ok->sampler.kind, SamplerKind::kParentBase);
  EXPECT_EQ(ok->sampler.root, SamplerKind::kTraceIdRatio);
  EXPECT_EQ(ok->sampler.root_fraction, 0.5);
  EXPECT_EQ(ok->header_pfxs, std::vector<std::string>{"x-foo-"});
  EXPECT_EQ(ok->headers, std::vector<std::string>{"ua"});
  EXPECT_EQ(parse_otel(Json::object())->sampler.kind, SamplerKind::kAlwaysOff);
}

TEST(OtelConf, Attr) {
  auto a = parse_otel_attr(Json::parse(R"({"trace_id_source": "x-request-id",
      "resource": {"env": "prod", "n": 2, "b": true},
      "collector": {"address": "127.0.0.1:9999", "request_timeout": 2,
                    "request_headers": {"X-Key": "k"}},
      "batch_span_processor": {"max_export_batch_size": 3, "batch_timeout": 0.5}})"),
                           "h1");
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  EXPECT_TRUE(a->trace_id_from_request_id);
  EXPECT_EQ(a->collector.port, 9999);
  EXPECT_EQ(a->collector.path, "/v1/traces");
  EXPECT_EQ(a->timeout_ms, 2000u);
  EXPECT_EQ(a->batch.batch_max_size, 3u);
  EXPECT_EQ(a->batch.buffer_duration_ms, 500u);
  ASSERT_EQ(a->resource.size(), 5u);  // hostname, service.name, then the three
  EXPECT_EQ(a->resource[0].s, "h1");
  EXPECT_EQ(a->resource[1].key, "service.name");
  EXPECT_EQ(a->resource[1].s, "APISIX");
  auto bad = parse_otel_attr(
      Json::parse(R"({"batch_span_processor": {"drop_on_queue_full": false}})"), "h");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("drop_on_queue_full"), std::string::npos);
  EXPECT_FALSE(parse_otel_attr(Json::parse(R"({"trace_id_source": "uuid"})"), "h").is_ok());
  EXPECT_FALSE(
      parse_otel_attr(Json::parse(R"({"collector": {"address": "ftp://x:1"}})"), "h").is_ok());
}

TEST(OtelConf, Samplers) {
  uint8_t low[16] = {}, high[16];
  low[15] = 1;
  std::fill(high, high + 16, 0xff);
  Sampler ratio{SamplerKind::kTraceIdRatio, 0.5};
  EXPECT_TRUE(sample(ratio, low, -1));
  EXPECT_FALSE(sample(ratio, high, -1));
  EXPECT_FALSE(sample({SamplerKind::kTraceIdRatio, 0}, low, -1));
  EXPECT_TRUE(sample({SamplerKind::kTraceIdRatio, 1}, high, -1));
  EXPECT_TRUE(sample({SamplerKind::kAlwaysOn}, high, 0));  // not parent-based: ignores it
  EXPECT_FALSE(sample({SamplerKind::kAlwaysOff}, high, 1));
  Sampler parent{SamplerKind::kParentBase, 0, SamplerKind::kAlwaysOn};
  EXPECT_TRUE(sample(parent, high, -1));  // root decides
  EXPECT_FALSE(sample(parent, high, 0));  // parent says no
  parent.root = SamplerKind::kAlwaysOff;
  EXPECT_TRUE(sample(parent, high, 1));  // parent says yes
  EXPECT_FALSE(sample(parent, high, -1));
}

}  // namespace
}  // namespace sluice::plugins::tracing
