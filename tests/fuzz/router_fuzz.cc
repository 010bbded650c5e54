// Fuzz target: the router. The input is one of two things:
//
//   - A request head (as a client sends it): parsed with h1::parse_request and matched against
//     a fixed RouteTable. The match must equal a brute-force reference that walks every route
//     in the order route_table.h documents. `X-Remote: <ip>` sets the client address.
//   - A `vars` expression: a line starting with '[' holding JSON, optionally followed by a
//     request head. The JSON is compiled with Expr::compile; a compiled expression is
//     evaluated against the request (or a fixed one), and must agree with ["OR", e, e],
//     the negation ["!AND", e, e], and a one-route table whose route carries it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codec/h1/parser.h"
#include "fuzz/fuzz_check.h"
#include "router/expr.h"
#include "router/ip.h"
#include "router/route_table.h"
#include "router/text.h"

namespace {

using namespace sluice;
using nlohmann::json;
using router::RouteSpec;

constexpr uint32_t bit(http::Method m) { return http::method_bit(m); }

struct RouteDef {
  RouteDef(std::vector<std::string> u, std::vector<std::string> h = {}, uint32_t m = 0,
           std::vector<std::string> r = {}, const char* v = nullptr, int p = 0)
      : uris(std::move(u)),
        hosts(std::move(h)),
        methods(m),
        remote_addrs(std::move(r)),
        vars(v),
        priority(p) {}
  std::vector<std::string> uris;
  std::vector<std::string> hosts;
  uint32_t methods;
  std::vector<std::string> remote_addrs;
  const char* vars;
  int priority;
};

// Overlapping hosts, paths and priorities, so the order of candidates matters.
const std::vector<RouteDef>& route_defs() {
  using http::Method;
  static const std::vector<RouteDef> kDefs = {
      {{"/"}},
      {{"/api/*"}, {}, bit(Method::kGet) | bit(Method::kPost)},
      {{"/api/v1/users"}, {"api.example.com"}},
      {{"/api/v1/*"}, {"*.example.com"}, 0, {}, nullptr, 5},
      {{"/api/v1/*"}, {"*.example.com"}, 0, {}, nullptr, 5},
      {{"/static/*", "/assets/*"}, {"cdn.example.com", "*.cdn.example.com"}},
      {{"/login"}, {}, bit(Method::kPost), {"10.0.0.0/8", "::1"}},
      {{"/admin/*"}, {}, 0, {"127.0.0.1", "192.168.0.0/16"}, R"([["http_x_admin", "==", "yes"]])"},
      {{"/search"}, {}, 0, {}, R"([["arg_q", "~~", "^[a-z]+$"]])"},
      {{"/search"}, {}, 0, {}, R"([["arg_q", "~*", "FOO|bar.*baz"]])", 1},
      {{"/v/*"},
       {},
       0,
       {},
       R"(["OR", ["http_x_version", "in", ["1", "2", 3]], ["cookie_v", ">=", 10]])"},
      {{"/has"}, {}, 0, {}, R"([["http_accept", "has", "text/html"]])"},
      {{"/ip"}, {}, 0, {}, R"([["remote_addr", "ipmatch", ["10.0.0.0/8", "fe80::/10"]]])"},
      {{"/neg"}, {}, 0, {}, R"([["arg_a", "!", "==", "1"], ["request_method", "~=", "DELETE"]])"},
      {{"/num"}, {}, 0, {}, R"([["arg_n", ">", "5"], ["arg_n", "<=", 100]])"},
      {{"/port"}, {}, 0, {}, R"([["server_port", "==", 9080], ["host", "==", "example.com"]])"},
      {{"/uri*"}, {}, 0, {}, R"(["!AND", ["uri", "==", "/uri/x"], ["request_uri", "~~", "\\?"]])"},
      {{"/args"}, {}, 0, {}, R"([["args", "~~", "a=1"], ["query_string", "~=", ""]])"},
      {{"/p/*"}, {"a.com"}, 0, {}, nullptr, 2},
      {{"/p/*"}, {"A.com."}, 0, {}, nullptr, 2},
      {{"/p/q*"}, {"a.com"}, bit(Method::kDelete)},
      {{"/p/*"}, {"*.com"}},
      {{"/p/*"}, {"*.a.com"}, 0, {}, nullptr, -1},
      {{"/p/qq"}, {"*.a.com", "b.a.com"}},
      {{"/x"}, {"[::1]", "127.0.0.1"}},
      {{"/*"}, {"*.example.com"}, 0, {}, nullptr, -5},
      {{"/*"},
       {},
       bit(Method::kPut) | bit(Method::kDelete) | bit(Method::kPatch),
       {},
       nullptr,
       -10},
      {{"/deep/a/b/c/*", "/deep/a/*", "/deep/*"}, {}, bit(Method::kOptions)},
      {{"/cookie"},
       {},
       0,
       {},
       R"([["cookie_session", "~~", "^[0-9a-f]{8}$"], ["cookie_x", "~=", "1"]])"},
  };
  return kDefs;
}

std::vector<RouteSpec> make_specs() {
  std::vector<RouteSpec> specs;
  for (const RouteDef& d : route_defs()) {
    RouteSpec s;
    s.uris = d.uris;
    s.hosts = d.hosts;
    s.methods = d.methods;
    for (const std::string& a : d.remote_addrs) {
      s.remote_addrs.push_back(*router::parse_cidr(a));
    }
    if (d.vars != nullptr) {
      auto e = router::Expr::compile(json::parse(d.vars));
      FUZZ_CHECK(e.is_ok());
      s.vars = *e;
    }
    s.priority = d.priority;
    s.index = static_cast<uint32_t>(specs.size());
    specs.push_back(std::move(s));
  }
  return specs;
}

const router::RouteTable& table() {
  static const router::RouteTable kTable = [] {
    auto t = router::RouteTable::build(make_specs());
    FUZZ_CHECK(t.is_ok());
    return std::move(t).value();
  }();
  return kTable;
}

bool passes(const RouteSpec& r, const router::MatchContext& ctx) {
  if (r.methods != 0 && (r.methods & http::method_bit(ctx.req->method)) == 0) {
    return false;
  }
  if (!r.remote_addrs.empty() &&
      std::none_of(r.remote_addrs.begin(), r.remote_addrs.end(),
                   [&](const router::Cidr& c) { return c.contains(ctx.remote_ip); })) {
    return false;
  }
  return r.vars.eval(ctx);
}

// The reference: within one host group, routes with the exact path, then prefix routes
// longest prefix first; ties by priority (higher first), then index.
const RouteSpec* reference_group(const std::vector<const RouteSpec*>& group,
                                 const router::MatchContext& ctx) {
  const std::string_view path = ctx.req->uri;
  // key: (prefix length, or SIZE_MAX for exact) -> routes at that level.
  std::map<size_t, std::vector<const RouteSpec*>, std::greater<>> levels;
  for (const RouteSpec* r : group) {
    for (const std::string& uri : r->uris) {
      if (uri.back() == '*') {
        const std::string_view prefix = std::string_view(uri).substr(0, uri.size() - 1);
        if (path.starts_with(prefix)) {
          levels[prefix.size()].push_back(r);
        }
      } else if (path == uri) {
        levels[SIZE_MAX].push_back(r);
      }
    }
  }
  for (auto& [level, routes] : levels) {
    std::sort(routes.begin(), routes.end(), [](const RouteSpec* a, const RouteSpec* b) {
      return a->priority != b->priority ? a->priority > b->priority : a->index < b->index;
    });
    for (const RouteSpec* r : routes) {
      if (passes(*r, ctx)) {
        return r;
      }
    }
  }
  return nullptr;
}

const RouteSpec* reference_match(const std::vector<RouteSpec>& specs,
                                 const router::MatchContext& ctx) {
  char buf[router::kMaxHostLen];
  const std::string_view host = router::normalize_host(ctx.req->host, buf);
  if (!host.empty()) {
    std::vector<const RouteSpec*> exact;
    std::map<size_t, std::map<std::string, std::vector<const RouteSpec*>>, std::greater<>> wild;
    for (const RouteSpec& r : specs) {
      for (const std::string& raw : r.hosts) {
        const std::string p = router::normalize_host_pattern(raw);
        if (p[0] != '*' && p == host) {
          exact.push_back(&r);
        } else if (p[0] == '*' && host.ends_with(std::string_view(p).substr(1))) {
          wild[p.size() - 1][p.substr(1)].push_back(&r);
        }
      }
    }
    if (const RouteSpec* r = reference_group(exact, ctx)) {
      return r;
    }
    for (const auto& [len, by_name] : wild) {
      FUZZ_CHECK(by_name.size() == 1);  // equal-length suffixes of one host are equal
      if (const RouteSpec* r = reference_group(by_name.begin()->second, ctx)) {
        return r;
      }
    }
  }
  std::vector<const RouteSpec*> any;
  for (const RouteSpec& r : specs) {
    if (r.hosts.empty()) {
      any.push_back(&r);
    }
  }
  return reference_group(any, ctx);
}

// A request and the context the router sees; views point into the caller's buffer.
struct Request {
  http::RequestHead head;
  router::MatchContext ctx;
};

bool parse_request(std::string_view text, Request* out) {
  if (h1::parse_request(text, h1::Limits(), &out->head).status != h1::ParseStatus::kComplete) {
    return false;
  }
  out->ctx.req = &out->head;
  out->ctx.remote_addr = "127.0.0.1";
  if (const http::Header* h = out->head.find("X-Remote")) {
    out->ctx.remote_addr = h->value;
  }
  if (!router::parse_ip(out->ctx.remote_addr, &out->ctx.remote_ip)) {
    out->ctx.remote_addr = "127.0.0.1";
    FUZZ_CHECK(router::parse_ip(out->ctx.remote_addr, &out->ctx.remote_ip));
  }
  out->ctx.server_port = 9080;
  return true;
}

void match_request(const Request& req) {
  static const std::vector<RouteSpec> kSpecs = make_specs();
  const RouteSpec* got = table().match(req.ctx);
  const RouteSpec* want = reference_match(kSpecs, req.ctx);
  FUZZ_CHECK((got == nullptr) == (want == nullptr));
  if (got != nullptr) {
    FUZZ_CHECK(got->index == want->index);
  }
}

constexpr std::string_view kDefaultRequest =
    "GET /search?q=abc&a=1&n=7 HTTP/1.1\r\nHost: Example.com:9080\r\n"
    "Cookie: v=12; session=0123abcd\r\nAccept: text/html, application/json\r\n"
    "X-Version: 2\r\nX-Remote: 10.1.2.3\r\n\r\n";

void check_vars(std::string_view json_text, std::string_view request_text) {
  const json vars = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (vars.is_discarded()) {
    return;
  }
  auto expr = router::Expr::compile(vars);
  if (!expr.is_ok()) {
    FUZZ_CHECK(expr.status().message().starts_with("failed to validate the 'vars' expression: "));
    return;
  }
  Request req;
  if (!parse_request(request_text, &req)) {
    FUZZ_CHECK(parse_request(kDefaultRequest, &req));
  }
  const bool value = expr->eval(req.ctx);
  FUZZ_CHECK(expr->eval(req.ctx) == value);
  if (!expr->empty()) {
    // Wrapping adds a level; it may pass the depth limit, which is then an error.
    if (auto same = router::Expr::compile(json::array({"OR", vars, vars}))) {
      FUZZ_CHECK(same->eval(req.ctx) == value);
    }
    if (auto negated = router::Expr::compile(json::array({"!AND", vars, vars}))) {
      FUZZ_CHECK(negated->eval(req.ctx) == !value);
    }
  }
  if (req.head.uri.starts_with('/')) {
    RouteSpec spec;
    spec.uris = {"/*"};
    spec.vars = *expr;
    std::vector<RouteSpec> specs;
    specs.push_back(std::move(spec));
    auto one = router::RouteTable::build(std::move(specs));
    FUZZ_CHECK(one.is_ok());
    FUZZ_CHECK((one->match(req.ctx) != nullptr) == value);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (!in.empty() && in[0] == '[') {
    const size_t nl = in.find('\n');
    check_vars(in.substr(0, nl),
               nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1));
    return 0;
  }
  Request req;
  if (parse_request(in, &req)) {
    match_request(req);
  }
  return 0;
}
