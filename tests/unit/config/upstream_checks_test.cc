#include "config/upstream_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/resources.h"

namespace sluice::config {
namespace upstream_checks_test {

using health::ProbeType;

TEST(DecodeChecks, ActiveDefaultsAsApisix) {
  auto c = decode_checks(Json::parse(R"({"active": {}})"));
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  const health::ActiveChecks& a = c->active;
  EXPECT_EQ(a.type, ProbeType::kHttp);
  EXPECT_EQ(a.timeout, 1);
  EXPECT_EQ(a.concurrency, 10);
  EXPECT_EQ(a.http_path, "/");
  EXPECT_TRUE(a.https_verify_certificate);
  EXPECT_EQ(a.port, 0);
  EXPECT_EQ(a.healthy.interval, 1);
  EXPECT_EQ(a.healthy.successes, 2);
  EXPECT_EQ(a.healthy.http_statuses, (health::StatusSet{200, 302}));
  EXPECT_EQ(a.unhealthy.interval, 1);
  EXPECT_EQ(a.unhealthy.http_statuses, (health::StatusSet{429, 404, 500, 501, 502, 503, 504, 505}));
  EXPECT_EQ(a.unhealthy.http_failures, 5);
  EXPECT_EQ(a.unhealthy.tcp_failures, 2);
  EXPECT_EQ(a.unhealthy.timeouts, 3);
  EXPECT_FALSE(c->passive.has_value());
}

TEST(DecodeChecks, PassiveDefaultsAsApisix) {
  auto c = decode_checks(Json::parse(R"({"active": {}, "passive": {}})"));
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  ASSERT_TRUE(c->passive.has_value());
  const health::PassiveChecks& p = *c->passive;
  EXPECT_EQ(p.type, ProbeType::kHttp);
  EXPECT_EQ(p.healthy.successes, 5);
  EXPECT_TRUE(p.healthy.http_statuses.has(226));
  EXPECT_TRUE(p.healthy.http_statuses.has(308));
  EXPECT_FALSE(p.healthy.http_statuses.has(404));
  EXPECT_EQ(p.unhealthy.http_statuses, (health::StatusSet{429, 500, 503}));
  EXPECT_EQ(p.unhealthy.http_failures, 5);
  EXPECT_EQ(p.unhealthy.tcp_failures, 2);
  EXPECT_EQ(p.unhealthy.timeouts, 7);
}

TEST(DecodeChecks, ReadsEveryField) {
  auto c = decode_checks(Json::parse(R"({"active": {"type": "https", "timeout": 0.5,
      "concurrency": 3, "host": "foo.com", "port": 8443, "http_path": "/ping",
      "https_verify_certificate": false, "req_headers": ["A: 1", "B: 2"],
      "healthy": {"interval": 2, "http_statuses": [200], "successes": 1},
      "unhealthy": {"interval": 3, "http_statuses": [500], "http_failures": 1,
                    "tcp_failures": 4, "timeouts": 6}},
    "passive": {"type": "tcp", "healthy": {"http_statuses": [201], "successes": 0},
      "unhealthy": {"http_statuses": [502], "http_failures": 0, "tcp_failures": 1,
                    "timeouts": 9}}})"));
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  const auto& a = c->active;
  EXPECT_EQ(a.type, ProbeType::kHttps);
  EXPECT_EQ(a.timeout, 0.5);
  EXPECT_EQ(a.concurrency, 3);
  EXPECT_EQ(a.host, "foo.com");
  EXPECT_EQ(a.port, 8443);
  EXPECT_EQ(a.http_path, "/ping");
  EXPECT_FALSE(a.https_verify_certificate);
  EXPECT_EQ(a.req_headers, (std::vector<std::string>{"A: 1", "B: 2"}));
  EXPECT_EQ(a.healthy.interval, 2);
  EXPECT_EQ(a.healthy.http_statuses, (health::StatusSet{200}));
  EXPECT_EQ(a.healthy.successes, 1);
  EXPECT_EQ(a.unhealthy.interval, 3);
  EXPECT_EQ(a.unhealthy.http_statuses, (health::StatusSet{500}));
  EXPECT_EQ(a.unhealthy.http_failures, 1);
  EXPECT_EQ(a.unhealthy.tcp_failures, 4);
  EXPECT_EQ(a.unhealthy.timeouts, 6);
  const auto& p = *c->passive;
  EXPECT_EQ(p.type, ProbeType::kTcp);
  EXPECT_EQ(p.healthy.http_statuses, (health::StatusSet{201}));
  EXPECT_EQ(p.healthy.successes, 0);
  EXPECT_EQ(p.unhealthy.http_statuses, (health::StatusSet{502}));
  EXPECT_EQ(p.unhealthy.http_failures, 0);
  EXPECT_EQ(p.unhealthy.tcp_failures, 1);
  EXPECT_EQ(p.unhealthy.timeouts, 9);
}

TEST(DecodeChecks, Errors) {
  struct Case {
    const char* json;
    const char* error;
  };
  const Case cases[] = {
      {R"({"passive": {}})",
       R"(object matches none of the required: ["active"] or ["active","passive"])"},
      {R"({})", R"(object matches none of the required: ["active"] or ["active","passive"])"},
      {R"({"active": {}, "other": 1})", "additional properties forbidden, found other"},
      {R"({"active": {"type": "udp"}})",
       R"(property "active" validation failed: property "type" validation failed: matches none of the enum values)"},
      {R"({"active": {"timeout": "1"}})",
       R"(property "active" validation failed: property "timeout" validation failed: wrong type: expected number, got string)"},
      {R"({"active": {"port": 0}})",
       R"(property "active" validation failed: property "port" validation failed: expected 0 to be at least 1)"},
      {R"({"active": {"healthy": {"interval": 0}}})",
       R"(property "active" validation failed: property "healthy" validation failed: property "interval" validation failed: expected 0 to be at least 1)"},
      {R"({"active": {"healthy": {"successes": 255}}})",
       R"(property "active" validation failed: property "healthy" validation failed: property "successes" validation failed: expected 255 to be at most 254)"},
      {R"({"active": {"unhealthy": {"http_failures": 0}}})",
       R"(property "active" validation failed: property "unhealthy" validation failed: property "http_failures" validation failed: expected 0 to be at least 1)"},
      {R"({"active": {"healthy": {"http_statuses": []}}})",
       R"(property "active" validation failed: property "healthy" validation failed: property "http_statuses" validation failed: expect array to have at least 1 items)"},
      {R"({"active": {"healthy": {"http_statuses": [199]}}})",
       R"(property "active" validation failed: property "healthy" validation failed: property "http_statuses" validation failed: failed to validate item 1: expected 199 to be at least 200)"},
      {R"({"active": {"unhealthy": {"http_statuses": [500, 500]}}})",
       R"(property "active" validation failed: property "unhealthy" validation failed: property "http_statuses" validation failed: expected unique items but items 1 and 2 are equal)"},
      {R"({"active": {"req_headers": [1]}})",
       R"(property "active" validation failed: property "req_headers" validation failed: failed to validate item 1: wrong type: expected string, got number)"},
      {R"({"active": {"https_verify_certificate": 1}})",
       R"(property "active" validation failed: property "https_verify_certificate" validation failed: wrong type: expected boolean, got number)"},
      {R"({"active": {}, "passive": {"unhealthy": {"timeouts": -1}}})",
       R"(property "passive" validation failed: property "unhealthy" validation failed: property "timeouts" validation failed: expected -1 to be at least 0)"},
      {R"({"active": {}, "passive": {"healthy": 1}})",
       R"(property "passive" validation failed: property "healthy" validation failed: wrong type: expected object, got number)"},
      {R"([])", "wrong type: expected object, got table"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    auto r = decode_checks(Json::parse(c.json));
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), c.error);
  }
}

TEST(DecodeChecks, UpstreamKeepsTheJsonAsSentAndTheTypedForm) {
  const char* text = R"({"nodes": {"127.0.0.1:1980": 1, "127.0.0.1:1981": 1},
      "checks": {"active": {"http_path": "/status", "healthy": {"successes": 1}}}})";
  auto u = decode_upstream(Json::parse(text));
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  EXPECT_EQ(u->checks, Json::parse(text)["checks"]);  // no defaults written into it
  ASSERT_NE(u->health_checks, nullptr);
  EXPECT_EQ(u->health_checks->active.http_path, "/status");
  EXPECT_EQ(u->health_checks->active.healthy.successes, 1);
  auto passive_only = decode_upstream(Json::parse(R"({"nodes": {}, "checks": {"passive": {}}})"));
  ASSERT_FALSE(passive_only.is_ok());
  EXPECT_EQ(
      passive_only.status().message(),
      R"(invalid configuration: property "checks" validation failed: object matches none of the required: ["active"] or ["active","passive"])");
}

}  // namespace upstream_checks_test
}  // namespace sluice::config
