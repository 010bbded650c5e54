#include "bench/load_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::bench {
namespace {

struct UrlCase {
  std::string url;
  std::string ip;  // empty: an error is expected, containing `error`
  uint16_t port;
  std::string authority;
  std::string path;
  std::string error;
};

TEST(ParseUrlTest, Table) {
  const std::vector<UrlCase> cases = {
      {"http://127.0.0.1:8080/hello", "127.0.0.1", 8080, "127.0.0.1:8080", "/hello", ""},
      {"HTTP://127.0.0.1/", "127.0.0.1", 80, "127.0.0.1", "/", ""},
      {"http://localhost/x?y=1#frag", "127.0.0.1", 80, "localhost", "/x?y=1", ""},
      {"http://[::1]:9000", "::1", 9000, "[::1]:9000", "/", ""},
      {"http://127.0.0.1:81?q=2", "127.0.0.1", 81, "127.0.0.1:81", "/?q=2", ""},
      {"https://127.0.0.1/", "", 0, "", "", "only http:// URLs are supported"},
      {"127.0.0.1:80/", "", 0, "", "", "only http:// URLs are supported"},
      {"http://example.com/", "", 0, "", "", "IPv4 literal, a bracketed IPv6 literal or localhost"},
      {"http://::1/", "", 0, "", "", "not an integer"},
      {"http://127.0.0.1:99999/", "", 0, "", "", "out of range"},
      {"http://user@127.0.0.1/", "", 0, "", "", "missing or malformed host"},
      {"http:///x", "", 0, "", "", "missing or malformed host"},
      {"http://[::1/", "", 0, "", "", "unterminated '['"},
      {"http://127.0.0.1/a b", "", 0, "", "", "spaces or control bytes"},
  };
  for (const UrlCase& c : cases) {
    auto t = parse_url(c.url);
    if (c.ip.empty()) {
      ASSERT_FALSE(t.is_ok()) << c.url;
      EXPECT_NE(t.status().message().find(c.error), std::string::npos)
          << c.url << ": " << t.status().message();
      continue;
    }
    ASSERT_TRUE(t.is_ok()) << c.url << ": " << t.status().message();
    EXPECT_EQ(t->addr.ip_text(), c.ip) << c.url;
    EXPECT_EQ(t->addr.port(), c.port) << c.url;
    EXPECT_EQ(t->authority, c.authority) << c.url;
    EXPECT_EQ(t->path, c.path) << c.url;
  }
}

TEST(ParseLoadArgsTest, DefaultsAndEveryFlag) {
  auto d = parse_load_args({"--url", "http://127.0.0.1:1/"});
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->connections, 16);
  EXPECT_EQ(d->duration_s, 5.0);
  EXPECT_EQ(d->threads, 1);
  EXPECT_FALSE(d->rate.has_value());
  EXPECT_EQ(d->timeout_ms, 2000u);

  auto o = parse_load_args({"-c", "8", "-d", "2.5s", "--threads=2", "--rate", "1500.5",
                            "--timeout-ms", "300", "--header", "X-A: b", "-H", "X-C: d", "--host",
                            "example.test", "http://127.0.0.1:1/p"});
  ASSERT_TRUE(o.is_ok()) << o.status().message();
  EXPECT_EQ(o->url, "http://127.0.0.1:1/p");
  EXPECT_EQ(o->connections, 8);
  EXPECT_EQ(o->duration_s, 2.5);
  EXPECT_EQ(o->threads, 2);
  EXPECT_EQ(*o->rate, 1500.5);
  EXPECT_EQ(o->timeout_ms, 300u);
  EXPECT_EQ(o->headers, (std::vector<std::string>{"X-A: b", "X-C: d"}));
  EXPECT_EQ(o->host, "example.test");
}

TEST(ParseLoadArgsTest, Errors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "--url is required"},
      {{"--url", "http://127.0.0.1/", "--bogus"}, "unknown argument --bogus"},
      {{"--url", "http://127.0.0.1/", "-c", "0"}, "-c: 0 is out of range"},
      {{"--url", "http://127.0.0.1/", "-c", "x"}, "-c: 'x' is not an integer"},
      {{"--url", "http://127.0.0.1/", "-d", "-1"}, "-d: must be a positive number"},
      {{"--url", "http://127.0.0.1/", "--rate", "0"}, "--rate: must be a positive number"},
      {{"--url", "http://127.0.0.1/", "-c", "2", "--threads", "4"},
       "--threads 4 is more than the 2 connections"},
      {{"--url", "http://127.0.0.1/", "--header", "NoColon"}, "expected 'Name: value'"},
      {{"--url", "http://127.0.0.1/", "--header", "Bad Name: v"}, "bad character in the name"},
      {{"--url"}, "--url needs a value"},
  };
  for (const auto& [args, error] : cases) {
    auto o = parse_load_args(args);
    ASSERT_FALSE(o.is_ok()) << error;
    EXPECT_NE(o.status().message().find(error), std::string::npos) << o.status().message();
  }
}

TEST(BuildRequestTest, HostFromUrlFlagOrHeader) {
  auto t = parse_url("http://127.0.0.1:8080/p?q");
  ASSERT_TRUE(t.is_ok());
  LoadOptions o;
  o.headers = {"X-A: b"};
  EXPECT_EQ(build_request(o, *t), "GET /p?q HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: b\r\n\r\n");
  o.host = "api.test";
  EXPECT_EQ(build_request(o, *t), "GET /p?q HTTP/1.1\r\nHost: api.test\r\nX-A: b\r\n\r\n");
  o.headers = {"host: h.test"};
  EXPECT_EQ(build_request(o, *t), "GET /p?q HTTP/1.1\r\nhost: h.test\r\n\r\n");
}

}  // namespace
}  // namespace sluice::bench
