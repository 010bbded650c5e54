// Proves RouteTable::match and Expr::eval do not allocate, by counting calls to the global
// operator new (replaced for the whole unit_router binary; it only counts while asked to).

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "router/route_table.h"
#include "unit/router/fake_request.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<size_t> g_allocations{0};

void* counted_alloc(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  return p;
}
}  // namespace

void* operator new(size_t n) { return counted_alloc(n); }
void* operator new[](size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace sluice::router {
namespace {

using nlohmann::json;
using testing::FakeRequest;

class CountAllocations {
 public:
  CountAllocations() {
    g_allocations = 0;
    g_counting = true;
  }
  ~CountAllocations() { g_counting = false; }
  size_t count() const { return g_allocations.load(); }
};

TEST(NoAllocation, CounterWorks) {
  CountAllocations counter;
  std::string s(100, 'x');
  EXPECT_GT(counter.count(), 0u);
}

RouteTable build_table() {
  std::vector<RouteSpec> specs;
  for (uint32_t i = 0; i < 1000; ++i) {
    RouteSpec s;
    const std::string n = std::to_string(i);
    s.uris = {i % 2 == 0 ? "/svc/" + n + "/items" : "/svc/" + n + "/*"};
    if (i % 10 == 0) {
      s.hosts = {"h" + n + ".example.com", "*.w" + n + ".example.com"};
    }
    s.index = i;
    specs.push_back(std::move(s));
  }
  const char* vars[] = {
      R"([["uri", "~~", "^/v/[a-z]+$"], ["http_user_agent", "~*", "CURL"]])",
      R"(["OR", ["arg_id", ">", 100], ["cookie_session", "in", ["a", "b", 7]]])",
      R"([["remote_addr", "ipmatch", ["10.0.0.0/8", "fe80::/10"]], ["host", "~=", "x.com"],
          ["server_port", "==", 9080], ["http_accept", "!", "has", "text/html"],
          ["request_method", "!", "==", "DELETE"]])",
  };
  for (uint32_t i = 0; i < 3; ++i) {
    RouteSpec s;
    s.uris = {"/v/*"};
    s.vars = *Expr::compile(json::parse(vars[i]));
    s.priority = static_cast<int>(10 - i);
    s.remote_addrs = {*parse_cidr("10.0.0.0/8")};
    s.index = 1000 + i;
    specs.push_back(std::move(s));
  }
  return RouteTable::build(std::move(specs)).value();
}

TEST(NoAllocation, MatchWithVarsAndRegex) {
  const RouteTable table = build_table();
  FakeRequest r1("GET", "/svc/998/items", "H990.Example.com:8080");
  FakeRequest r2("GET", "/svc/997/a/b/c", "a.w990.example.com");
  FakeRequest r3("GET", "/nothing/here", "nohost.com");
  FakeRequest r4("GET", "/v/x", "", {{"User-Agent", "curl/8.0"}}, "10.1.1.1");
  FakeRequest r5("GET", "/v/x?id=7", "", {{"Cookie", "x=1; session=7"}}, "10.1.1.1");
  FakeRequest r6("PUT", "/v/x", "y.com:9080", {{"Accept", "text/plain"}, {"Accept", "text/html"}},
                 "10.1.1.1");
  FakeRequest r7("DELETE", "/v/x", "", {}, "10.1.1.1");
  struct Probe {
    const FakeRequest* req;
    int expect;
  };
  const Probe probes[] = {{&r1, 998},  {&r2, 997},  {&r3, -1}, {&r4, 1000},
                          {&r5, 1001}, {&r6, 1002}, {&r7, -1}};
  for (const Probe& p : probes) {  // warm-up: per-thread regex match data
    table.match(p.req->ctx);
  }
  int mismatches = 0;
  {
    CountAllocations counter;
    for (int i = 0; i < 1000; ++i) {
      const Probe& p = probes[i % std::size(probes)];
      const RouteSpec* hit = table.match(p.req->ctx);
      const int got = hit == nullptr ? -1 : static_cast<int>(hit->index);
      mismatches += got != p.expect;
      if (got != p.expect && i < 7) {
        ADD_FAILURE() << "probe " << i << " matched " << got << ", expected " << p.expect;
      }
    }
    EXPECT_EQ(counter.count(), 0u);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(NoAllocation, ResponseVariables) {
  FakeRequest r("GET", "/v/x");
  http::ResponseHead up;
  up.status = 200;
  up.headers[0] = {"Content-Type", "application/json"};
  up.num_headers = 1;
  ResponseView view;
  view.status = 200;
  view.upstream = &up;
  r.ctx.resp = &view;
  const Expr e = *Expr::compile(json::parse(
      R"([["status", "==", 200], ["upstream_status", ">=", 200],
          ["sent_http_content_type", "~~", "json$"], ["upstream_http_content_type", "~=", "x"]])"));
  EXPECT_TRUE(e.eval(r.ctx));  // warm-up: per-thread regex match data
  bool all = true;
  {
    CountAllocations counter;
    for (int i = 0; i < 1000; ++i) {
      all = e.eval(r.ctx) && all;
    }
    EXPECT_EQ(counter.count(), 0u);
  }
  EXPECT_TRUE(all);
}

}  // namespace
}  // namespace sluice::router
