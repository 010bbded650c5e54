#include "server/real_ip.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace sluice::server {
namespace {

router::IpAddr ip(const char* text) {
  router::IpAddr a;
  EXPECT_TRUE(router::parse_ip(text, &a)) << text;
  return a;
}

RealIpConfig config(std::vector<const char*> trusted, const char* header, bool recursive) {
  RealIpConfig c;
  for (const char* t : trusted) {
    c.trusted.push_back(*router::parse_cidr(t));
  }
  c.header = header;
  c.recursive = recursive;
  return c;
}

// The client address find_real_ip settles on, or "" when the peer stays the client.
std::string client(const RealIpConfig& c, const char* peer,
                   std::vector<std::pair<const char*, const char*>> headers) {
  http::RequestHead req;
  for (const auto& [n, v] : headers) {
    req.headers[req.num_headers++] = http::Header{n, v};
  }
  router::IpAddr addr;
  std::string text;
  if (!find_real_ip(c, ip(peer), req, &addr, &text)) {
    return "";
  }
  EXPECT_EQ(addr, ip(text.c_str()));
  return text;
}

TEST(RealIpTest, NothingTrustedByDefault) {
  RealIpConfig c;
  EXPECT_EQ(client(c, "127.0.0.1", {{"X-Real-IP", "10.1.2.3"}}), "");
}

TEST(RealIpTest, XRealIpFromATrustedPeerOnly) {
  RealIpConfig c = config({"127.0.0.1"}, "x-real-ip", false);
  struct Case {
    const char* peer;
    std::vector<std::pair<const char*, const char*>> headers;
    const char* want;
  } cases[] = {
      {"127.0.0.1", {{"X-Real-IP", "10.1.2.3"}}, "10.1.2.3"},
      {"127.0.0.1", {{"x-real-ip", "::1"}}, "::1"},
      {"127.0.0.2", {{"X-Real-IP", "10.1.2.3"}}, ""},
      {"127.0.0.1", {}, ""},
      {"127.0.0.1", {{"X-Real-IP", "nonsense"}}, ""},
      {"127.0.0.1", {{"X-Real-IP", "10.1.2.3, 10.1.2.4"}}, ""},
      {"127.0.0.1", {{"X-Real-IP", "10.1.2.3:80"}}, ""},
      {"127.0.0.1", {{"X-Real-IP", ""}}, ""},
      {"127.0.0.1", {{"X-Forwarded-For", "10.1.2.3"}}, ""},
  };
  for (const auto& k : cases) {
    EXPECT_EQ(client(c, k.peer, k.headers), k.want) << k.peer;
  }
}

TEST(RealIpTest, ForwardedForLastOrRecursive) {
  RealIpConfig flat = config({"127.0.0.1", "10.0.0.0/8"}, "x-forwarded-for", false);
  RealIpConfig deep = config({"127.0.0.1", "10.0.0.0/8"}, "x-forwarded-for", true);
  EXPECT_EQ(client(flat, "127.0.0.1", {{"X-Forwarded-For", "1.1.1.1, 10.0.0.5"}}), "10.0.0.5");
  EXPECT_EQ(client(deep, "127.0.0.1", {{"X-Forwarded-For", "1.1.1.1, 10.0.0.5"}}), "1.1.1.1");
  EXPECT_EQ(client(deep, "127.0.0.1", {{"X-Forwarded-For", "10.0.0.9, 10.0.0.5"}}), "10.0.0.9");
  // Two header lines read as one list.
  EXPECT_EQ(
      client(deep, "127.0.0.1", {{"X-Forwarded-For", "2.2.2.2"}, {"X-Forwarded-For", "10.0.0.7"}}),
      "2.2.2.2");
  // One bad item and the whole header is ignored.
  EXPECT_EQ(client(flat, "127.0.0.1", {{"X-Forwarded-For", "1.1.1.1, , 10.0.0.5"}}), "");
  EXPECT_EQ(client(flat, "127.0.0.1", {{"X-Forwarded-For", "1.1.1.1, unknown"}}), "");
}

}  // namespace
}  // namespace sluice::server
