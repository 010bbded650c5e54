// real-ip: the conf's texts, address parsing, CIDR trust, and the address the request gets.

#include "plugins/real_ip/real_ip.h"

#include <gtest/gtest.h>

#include <string>

#include "unit/router/fake_request.h"

namespace sluice::plugins::real_ip {
namespace {

using plugin::Json;

std::string error_of(const char* conf) {
  auto c = parse(Json::parse(conf));
  return c.is_ok() ? "" : c.status().message();
}

TEST(RealIpConf, ErrorTexts) {
  const std::pair<const char*, const char*> cases[] = {
      {"{}", R"(property "source" is required)"},
      {R"({"source": ""})",
       R"(property "source" validation failed: string too short, expected at least 1, got 0)"},
      {R"({"source": "arg_realip", "trusted_addresses": []})",
       R"(property "trusted_addresses" validation failed: expect array to have at least 1 items)"},
      {R"({"source": "arg_realip", "trusted_addresses": ["localhost"]})",
       R"(property "trusted_addresses" validation failed: failed to validate item 1: object matches none of the required)"},
      {R"({"source": "arg_realip", "trusted_addresses": ["::1/129"]})",
       "invalid ip address: ::1/129"},
      {R"({"source": "arg_realip", "recursive": "yes"})",
       R"(property "recursive" validation failed: wrong type: expected boolean, got string)"},
      {R"({"source": "no_such_var"})",
       R"(source "no_such_var" is not a variable Sluice knows (arg_*, http_*, cookie_*, ...))"},
  };
  for (const auto& [conf, text] : cases) {
    EXPECT_EQ(error_of(conf), text) << conf;
  }
  EXPECT_EQ(error_of(R"({"source": "http_x_forwarded_for",
                         "trusted_addresses": ["127.0.0.0/24", "::1", "10.0.0.1"]})"),
            "");
}

TEST(RealIpAddr, Forms) {
  struct Case {
    const char* text;
    const char* ip;  // nullptr: refused
  };
  const Case cases[] = {
      {"1.2.3.4", "1.2.3.4"}, {"1.2.3.4:9080", "1.2.3.4"}, {"::1", "::1"},
      {"[::1]", "::1"},       {"[::1]:80", "::1"},         {"fe80::1:2", "fe80::1:2"},
      {"1.2.3.4:0", nullptr}, {"1.2.3.4:65536", nullptr},  {"1.2.3.4:x", nullptr},
      {"[::1]x", nullptr},    {"[::1", nullptr},           {"a.b.c.d", nullptr},
      {"", nullptr},          {"1.2.3.4:", nullptr},
  };
  for (const Case& c : cases) {
    router::IpAddr addr;
    std::string_view ip;
    const bool ok = parse_addr(c.text, &addr, &ip);
    EXPECT_EQ(ok, c.ip != nullptr) << c.text;
    if (ok && c.ip != nullptr) {
      EXPECT_EQ(ip, c.ip) << c.text;
    }
  }
}

// The client address a request ends with.
std::string client(const char* conf, const char* target,
                   std::initializer_list<std::pair<std::string_view, std::string_view>> headers,
                   const char* peer = "127.0.0.1") {
  auto c = parse(Json::parse(conf));
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  RealIp p(std::move(c).value());
  router::testing::FakeRequest req("GET", target, "a.com", headers, peer);
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  EXPECT_EQ(p.rewrite(ctx), plugin::Action::kContinue);
  router::IpAddr expect;
  EXPECT_TRUE(router::parse_ip(ctx.match.remote_addr, &expect));
  EXPECT_TRUE(expect == ctx.match.remote_ip) << ctx.match.remote_addr;
  return std::string(ctx.match.remote_addr);
}

TEST(RealIp, FromAnArgument) {
  const char* conf = R"({"source": "arg_realip", "trusted_addresses": ["127.0.0.0/24"]})";
  EXPECT_EQ(client(conf, "/get?realip=1.2.3.4:9080", {}), "1.2.3.4");
  EXPECT_EQ(client(conf, "/get?realip=[2001:db8::1]:80", {}), "2001:db8::1");
  EXPECT_EQ(client(conf, "/get?realip=bad", {}), "127.0.0.1");
  EXPECT_EQ(client(conf, "/get", {}), "127.0.0.1");
  // A peer outside trusted_addresses names nobody.
  EXPECT_EQ(client(conf, "/get?realip=1.2.3.4", {}, "10.0.0.1"), "10.0.0.1");
}

TEST(RealIp, AnyPeerWithoutTrustedAddresses) {
  EXPECT_EQ(client(R"({"source": "http_x_real_ip"})", "/", {{"X-Real-IP", "5.6.7.8"}}, "192.0.2.1"),
            "5.6.7.8");
  EXPECT_EQ(client(R"({"source": "http_x_forwarded_for"})", "/",
                   {{"X-Forwarded-For", "1.1.1.1, 2.2.2.2"}}, "::1"),
            "2.2.2.2");
}

TEST(RealIp, ForwardedForRecursive) {
  const char* plain =
      R"({"source": "http_x_forwarded_for", "trusted_addresses": ["127.0.0.1", "10.0.0.0/8"]})";
  const char* recursive = R"({"source": "http_x_forwarded_for", "recursive": true,
                              "trusted_addresses": ["127.0.0.1", "10.0.0.0/8"]})";
  auto xff = std::pair<std::string_view, std::string_view>{"X-Forwarded-For",
                                                           "1.1.1.1, 2.2.2.2, 10.0.0.2"};
  EXPECT_EQ(client(plain, "/", {xff}), "10.0.0.2");
  EXPECT_EQ(client(recursive, "/", {xff}), "2.2.2.2");
  // All trusted: the leftmost.
  EXPECT_EQ(client(recursive, "/", {{"X-Forwarded-For", "10.1.1.1, 10.0.0.2"}}), "10.1.1.1");
  // Lines join: the last address of the last line.
  EXPECT_EQ(client(plain, "/", {{"X-Forwarded-For", "1.1.1.1"}, {"X-Forwarded-For", "3.3.3.3"}}),
            "3.3.3.3");
  EXPECT_EQ(client(plain, "/", {}), "127.0.0.1");
  EXPECT_EQ(client(plain, "/", {xff}, "192.0.2.7"), "192.0.2.7");
}

TEST(RealIp, Ipv6Trust) {
  const char* conf = R"({"source": "http_x_real_ip", "trusted_addresses": ["fe80::/10"]})";
  EXPECT_EQ(client(conf, "/", {{"X-Real-IP", "9.9.9.9"}}, "fe80::5"), "9.9.9.9");
  EXPECT_EQ(client(conf, "/", {{"X-Real-IP", "9.9.9.9"}}, "::1"), "::1");
  EXPECT_EQ(client(conf, "/", {{"X-Real-IP", "9.9.9.9"}}, "127.0.0.1"), "127.0.0.1");
}

}  // namespace
}  // namespace sluice::plugins::real_ip
