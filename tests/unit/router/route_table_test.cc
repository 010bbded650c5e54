#include "router/route_table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "unit/router/fake_request.h"

namespace sluice::router {
namespace {

using http::Method;
using http::method_bit;
using testing::FakeRequest;

constexpr uint32_t kGet = method_bit(Method::kGet);
constexpr uint32_t kPost = method_bit(Method::kPost);

struct R {
  std::vector<std::string> uris;
  std::vector<std::string> hosts = {};
  int priority = 0;
  uint32_t methods = 0;
  std::vector<std::string> remote_addrs = {};
  const char* vars = nullptr;
};

struct Req {
  const char* method;
  const char* target;
  const char* host = "";
  const char* remote = "127.0.0.1";
};

struct Case {
  const char* name;
  std::vector<R> routes;
  std::vector<std::pair<Req, int>> requests;  // expected route position, -1 = no route
};

RouteSpec to_spec(const R& r, uint32_t index) {
  RouteSpec s;
  s.uris = r.uris;
  s.hosts = r.hosts;
  s.priority = r.priority;
  s.methods = r.methods;
  for (const std::string& cidr : r.remote_addrs) {
    s.remote_addrs.push_back(*parse_cidr(cidr));
  }
  if (r.vars != nullptr) {
    s.vars = *Expr::compile(nlohmann::json::parse(r.vars));
  }
  s.index = index;
  return s;
}

RouteTable build(const std::vector<R>& routes) {
  std::vector<RouteSpec> specs;
  for (size_t i = 0; i < routes.size(); ++i) {
    specs.push_back(to_spec(routes[i], static_cast<uint32_t>(i)));
  }
  auto table = RouteTable::build(std::move(specs));
  EXPECT_TRUE(table.is_ok()) << table.status().message();
  return std::move(table).value();
}

int match(const RouteTable& table, const Req& r) {
  FakeRequest req(r.method, r.target, r.host, {}, r.remote);
  const RouteSpec* hit = table.match(req.ctx);
  return hit == nullptr ? -1 : static_cast<int>(hit->index);
}

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"exact path",
       {{{"/a"}}},
       {{{"GET", "/a"}, 0}, {{"GET", "/a/"}, -1}, {{"GET", "/ab"}, -1}, {{"GET", "/a?x=1"}, 0}}},
      {"slash star prefix",
       {{{"/a/*"}}},
       {{{"GET", "/a"}, -1}, {{"GET", "/a/"}, 0}, {{"GET", "/a/b/c"}, 0}, {{"GET", "/ab"}, -1}}},
      {"bare star prefix",
       {{{"/a*"}}},
       {{{"GET", "/a"}, 0}, {{"GET", "/ab"}, 0}, {{"GET", "/a/b"}, 0}, {{"GET", "/b"}, -1}}},
      {"the normalised path is matched (issue 20)",
       {{{"/*"}}, {{"/secret/*"}}},
       {{{"GET", "/secret/a"}, 1},
        {{"GET", "/%73ecret/a"}, 1},
        {{"GET", "/x/../secret/a"}, 1},
        {{"GET", "//secret/a"}, 1},
        {{"GET", "/./secret//a"}, 1},
        {{"GET", "/secret%2Fa"}, 1},
        {{"GET", "/secret;x/a"}, 0},
        {{"GET", "/public/a"}, 0}}},
      {"root and catch-all",
       {{{"/"}}, {{"/*"}}},
       {{{"GET", "/"}, 0}, {{"GET", "/x"}, 1}, {{"GET", "/x/y"}, 1}}},
      {"exact beats prefix whatever the priority",
       {{{"/a/*"}, {}, 100}, {{"/a/b"}}},
       {{{"GET", "/a/b"}, 1}, {{"GET", "/a/c"}, 0}}},
      {"deeper prefix beats shallower whatever the priority",
       {{{"/a/*"}, {}, 100}, {{"/a/b/*"}}},
       {{{"GET", "/a/b/c"}, 1}, {{"GET", "/a/b"}, 0}, {{"GET", "/a/x"}, 0}}},
      {"longer bare prefix beats shorter",
       {{{"/*"}}, {{"/ap*"}}, {{"/a*"}}, {{"/api/v1*"}}},
       {{{"GET", "/api/v1/x"}, 3},
        {{"GET", "/api/v2"}, 1},
        {{"GET", "/a"}, 2},
        {{"GET", "/b"}, 0}}},
      {"same exact path: priority then older",
       {{{"/x"}, {}, 1}, {{"/x"}, {}, 5}, {{"/x"}, {}, 5}},
       {{{"GET", "/x"}, 1}}},
      {"same prefix: priority then older",
       {{{"/p/*"}}, {{"/p/*"}, {}, -1}, {{"/p/*"}}},
       {{{"GET", "/p/q"}, 0}}},
      {"exact fails methods, prefix takes it",
       {{{"/a/b"}, {}, 0, kPost}, {{"/a/*"}}},
       {{{"GET", "/a/b"}, 1}, {{"POST", "/a/b"}, 0}}},
      {"deeper prefix fails vars, shallower takes it",
       {{{"/a/*"}}, {{"/a/b/*"}, {}, 0, 0, {}, R"([["arg_v", "==", "1"]])"}},
       {{{"GET", "/a/b/c?v=1"}, 1}, {{"GET", "/a/b/c?v=2"}, 0}}},
      {"higher priority fails, lower priority of same path wins",
       {{{"/x"}, {}, 9, kPost}, {{"/x"}, {}, 1}},
       {{{"GET", "/x"}, 1}, {{"POST", "/x"}, 0}}},
      {"methods",
       {{{"/m"}, {}, 0, kGet | kPost}},
       {{{"GET", "/m"}, 0}, {{"POST", "/m"}, 0}, {{"PUT", "/m"}, -1}, {{"FOO", "/m"}, -1}}},
      {"uris list",
       {{{"/a", "/b*"}}},
       {{{"GET", "/a"}, 0}, {{"GET", "/bcd"}, 0}, {{"GET", "/c"}, -1}}},
      {"host: case, port, trailing dot",
       {{{"/x"}, {"Foo.COM"}}, {{"/x"}}},
       {{{"GET", "/x", "foo.com"}, 0},
        {{"GET", "/x", "FOO.com:8080"}, 0},
        {{"GET", "/x", "foo.com."}, 0},
        {{"GET", "/x", "bar.com"}, 1},
        {{"GET", "/x", ""}, 1}}},
      {"route hosts tried before host-less routes, even against an exact path",
       {{{"/*"}, {"foo.com"}}, {{"/a"}}},
       {{{"GET", "/a", "foo.com"}, 0}, {{"GET", "/a", "bar.com"}, 1}}},
      {"host group fails, host-less takes it",
       {{{"/a"}, {"foo.com"}, 0, kPost}, {{"/a"}}},
       {{{"GET", "/a", "foo.com"}, 1}, {{"POST", "/a", "foo.com"}, 0}}},
      {"exact host before wildcard host",
       {{{"/a"}, {"*.foo.com"}, 100}, {{"/a"}, {"a.foo.com"}}},
       {{{"GET", "/a", "a.foo.com"}, 1}, {{"GET", "/a", "b.foo.com"}, 0}}},
      {"wildcard host",
       {{{"/a"}, {"*.foo.com"}}},
       {{{"GET", "/a", "a.foo.com"}, 0},
        {{"GET", "/a", "A.B.Foo.Com:80"}, 0},
        {{"GET", "/a", "foo.com"}, -1},
        {{"GET", "/a", "afoo.com"}, -1},
        {{"GET", "/a", "a.foo.org"}, -1}}},
      {"longest wildcard suffix first, then shorter, then host-less",
       {{{"/a"}, {"*.foo.com"}}, {{"/a"}, {"*.b.foo.com"}, 0, kPost}, {{"/a"}}},
       {{{"POST", "/a", "x.b.foo.com"}, 1},
        {{"GET", "/a", "x.b.foo.com"}, 0},
        {{"GET", "/a", "x.c.foo.com"}, 0},
        {{"GET", "/a", "foo.com"}, 2}}},
      {"several hosts",
       {{{"/a"}, {"a.com", "*.b.com"}}},
       {{{"GET", "/a", "a.com"}, 0}, {{"GET", "/a", "x.b.com"}, 0}, {{"GET", "/a", "c.com"}, -1}}},
      {"IPv6 host literal",
       {{{"/a"}, {"[::1]"}}, {{"/b"}}},
       {{{"GET", "/a", "[::1]:9080"}, 0},
        {{"GET", "/a", "[::1]"}, 0},
        {{"GET", "/a", "[::2]:9080"}, -1},
        {{"GET", "/b", "[::1]:9080"}, 1},
        {{"GET", "/a", "[::1"}, -1}}},
      {"over-long host falls through to host-less routes",
       {{{"/a"}, {"foo.com"}}, {{"/a"}}},
       {{{"GET", "/a",
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.foo.com"},
         1}}},
      {"remote_addrs v4 and v6",
       {{{"/a"}, {}, 0, 0, {"10.0.0.0/8", "fe80::/10"}}, {{"/b"}, {}, 0, 0, {"1.2.3.4"}}},
       {{{"GET", "/a", "", "10.9.8.7"}, 0},
        {{"GET", "/a", "", "11.0.0.1"}, -1},
        {{"GET", "/a", "", "fe80::1"}, 0},
        {{"GET", "/a", "", "::1"}, -1},
        {{"GET", "/b", "", "1.2.3.4"}, 1},
        {{"GET", "/b", "", "1.2.3.5"}, -1}}},
      {"vars pick among routes of one path",
       {{{"/a"}, {}, 0, 0, {}, R"([["arg_x", "==", "1"]])"},
        {{"/a"}, {}, 0, 0, {}, R"(["OR", ["http_x", "==", "y"], ["arg_x", "==", "2"]])"},
        {{"/a"}}},
       {{{"GET", "/a?x=1"}, 0}, {{"GET", "/a?x=2"}, 1}, {{"GET", "/a?x=3"}, 2}}},
      {"literal star inside a uri",
       {{{"/a/*/b"}}},
       {{{"GET", "/a/*/b"}, 0}, {{"GET", "/a/x/b"}, -1}}},
      {"prefix trie splits",
       {{{"/abc*"}}, {{"/abd*"}}, {{"/ab*"}}, {{"/abcdef*"}}},
       {{{"GET", "/abcdefg"}, 3},
        {{"GET", "/abcde"}, 0},
        {{"GET", "/abd"}, 1},
        {{"GET", "/abx"}, 2},
        {{"GET", "/a"}, -1}}},
  };
  return kCases;
}

TEST(RouteTable, Rules) {
  for (const Case& c : cases()) {
    const RouteTable table = build(c.routes);
    EXPECT_EQ(table.size(), c.routes.size());
    for (const auto& [req, expect] : c.requests) {
      EXPECT_EQ(match(table, req), expect) << c.name << ": " << req.method << " " << req.target
                                           << " host=" << req.host << " from " << req.remote;
    }
  }
}

TEST(RouteTable, IndexOrdersTiesNotPosition) {
  std::vector<RouteSpec> specs(2);
  specs[0].uris = {"/x"};
  specs[0].index = 7;
  specs[1].uris = {"/x"};
  specs[1].index = 3;
  const RouteTable table = RouteTable::build(std::move(specs)).value();
  EXPECT_EQ(match(table, {"GET", "/x"}), 3);
}

TEST(RouteTable, EmptyTableAndMove) {
  RouteTable empty;
  EXPECT_EQ(match(empty, {"GET", "/"}), -1);
  EXPECT_EQ(empty.size(), 0u);
  RouteTable table = build({{{"/a"}, {"h.com"}}, {{"/b*"}}});
  RouteTable moved = std::move(table);
  EXPECT_EQ(match(moved, {"GET", "/a", "h.com"}), 0);
  EXPECT_EQ(match(moved, {"GET", "/bb"}), 1);
}

TEST(RouteTable, BuildErrors) {
  struct ErrCase {
    R route;
    const char* error;
  };
  const ErrCase errs[] = {
      {{{}}, "route at index 0: no uri"},
      {{{"abc"}}, "route at index 0: invalid uri 'abc': must start with '/'"},
      {{{"/a", ""}}, "route at index 0: invalid uri '': must start with '/'"},
      {{{"/a"}, {"*"}}, "route at index 0: invalid host '*'"},
      {{{"/a"}, {""}}, "route at index 0: invalid host ''"},
      {{{"/a"}, {"a.*.com"}}, "route at index 0: invalid host 'a.*.com'"},
  };
  for (const ErrCase& e : errs) {
    auto table = RouteTable::build({to_spec(e.route, 0)});
    ASSERT_FALSE(table.is_ok()) << e.error;
    EXPECT_EQ(table.status().message(), e.error);
  }
}

// 10,000 routes: every path shape, one host in ten, a wildcard in a hundred.
TEST(RouteTable, TenThousandRoutes) {
  std::vector<RouteSpec> specs;
  for (uint32_t i = 0; i < 10000; ++i) {
    RouteSpec s;
    const std::string n = std::to_string(i);
    s.uris = {i % 2 == 0 ? "/svc/" + n + "/items" : "/svc/" + n + "/*"};
    if (i % 10 == 0) {
      s.hosts = {"h" + n + ".example.com"};
    } else if (i % 100 == 55) {
      s.hosts = {"*.w" + n + ".example.com"};
    }
    s.index = i;
    specs.push_back(std::move(s));
  }
  RouteSpec fallback;
  fallback.uris = {"/*"};
  fallback.index = 10000;
  specs.push_back(std::move(fallback));
  const RouteTable table = RouteTable::build(std::move(specs)).value();
  ASSERT_EQ(table.size(), 10001u);

  const std::pair<Req, int> checks[] = {
      {{"GET", "/svc/2/items"}, 2},
      {{"GET", "/svc/2/items/x"}, 10000},
      {{"GET", "/svc/9999/anything/deep"}, 9999},
      {{"GET", "/svc/9998/items"}, 9998},
      {{"GET", "/svc/9990/items", "h9990.example.com"}, 9990},
      {{"GET", "/svc/9990/items"}, 10000},  // host route, no host sent
      {{"GET", "/svc/9991/x", "h9990.example.com"}, 9991},
      {{"GET", "/svc/1155/x", "a.w1155.example.com"}, 1155},
      {{"GET", "/svc/1155/x", "w1155.example.com"}, 10000},
      {{"GET", "/svc/1155/x"}, 10000},
      {{"GET", "/svc/123"}, 10000},
      {{"GET", "/svc/123/"}, 123},
      {{"GET", "/other"}, 10000},
  };
  for (const auto& [req, expect] : checks) {
    EXPECT_EQ(match(table, req), expect) << req.target << " host=" << req.host;
  }
}

}  // namespace
}  // namespace sluice::router
