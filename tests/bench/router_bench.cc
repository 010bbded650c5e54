// Route match time against tables of 10, 1,000 and 100,000 routes. The numbers should not grow
// with the table: lookups hash the host and the exact path and walk a prefix trie whose depth
// depends on the path, not on the route count.

#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http/message.h"
#include "router/route_table.h"

namespace sluice::router {
namespace {

// Route i: three path shapes in turn, one in ten bound to its own host, one in fifty to a
// wildcard host.
RouteTable make_table(uint32_t n) {
  std::vector<RouteSpec> specs;
  specs.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    RouteSpec s;
    const std::string id = std::to_string(i);
    switch (i % 3) {
      case 0:
        s.uris = {"/api/v1/svc" + id + "/items"};
        break;
      case 1:
        s.uris = {"/api/v1/svc" + id + "/*"};
        break;
      default:
        s.uris = {"/static/" + id + "/index.html", "/static/" + id + "/assets*"};
        break;
    }
    if (i % 10 == 4) {
      s.hosts = {"svc" + id + ".example.com"};
    } else if (i % 50 == 7) {
      s.hosts = {"*.svc" + id + ".example.com"};
    }
    if (i % 7 == 0) {
      s.methods = http::method_bit(http::Method::kGet) | http::method_bit(http::Method::kPost);
    }
    s.index = i;
    specs.push_back(std::move(s));
  }
  return RouteTable::build(std::move(specs)).value();
}

// The highest route number below n with i % 3 == shape and no host of its own.
uint32_t last_with_shape(uint32_t n, uint32_t shape) {
  for (uint32_t i = n - 1;; --i) {
    if (i % 3 == shape && i % 10 != 4 && i % 50 != 7) {
      return i;
    }
  }
}

uint32_t last_with_host(uint32_t n) {
  for (uint32_t i = n - 1;; --i) {
    if (i % 10 == 4) {
      return i;
    }
  }
}

struct Request {
  http::RequestHead head;
  MatchContext ctx;
  std::string path, host;

  Request(std::string p, std::string h) : path(std::move(p)), host(std::move(h)) {
    head.method = http::Method::kGet;
    head.method_text = "GET";
    head.path = head.uri = path;
    head.target = path;
    head.host = host;
    ctx.req = &head;
    ctx.remote_addr = "10.0.0.1";
    parse_ip(ctx.remote_addr, &ctx.remote_ip);
    ctx.server_port = 9080;
  }
};

void run(benchmark::State& state, const RouteTable& table, const Request& req, bool expect_hit) {
  if ((table.match(req.ctx) != nullptr) != expect_hit) {
    state.SkipWithError("unexpected match result");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.match(req.ctx));
  }
}

void BM_ExactNearEnd(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const RouteTable table = make_table(n);
  const uint32_t i = last_with_shape(n, 0);
  const Request req("/api/v1/svc" + std::to_string(i) + "/items", "www.example.com");
  run(state, table, req, true);
}

void BM_PrefixNearEnd(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const RouteTable table = make_table(n);
  const uint32_t i = last_with_shape(n, 1);
  const Request req("/api/v1/svc" + std::to_string(i) + "/orders/42/lines", "www.example.com");
  run(state, table, req, true);
}

void BM_HostNearEnd(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  const RouteTable table = make_table(n);
  const uint32_t i = last_with_host(n);
  const std::string id = std::to_string(i);
  std::string path = i % 3 == 0   ? "/api/v1/svc" + id + "/items"
                     : i % 3 == 1 ? "/api/v1/svc" + id + "/x"
                                  : "/static/" + id + "/assets/app.js";
  const Request req(path, "SVC" + id + ".example.com:9080");
  run(state, table, req, true);
}

void BM_Miss(benchmark::State& state) {
  const RouteTable table = make_table(static_cast<uint32_t>(state.range(0)));
  const Request req("/api/v1/svc5/../nothing/here/at/all", "a.b.unknown.example.com");
  run(state, table, req, false);
}

void BM_VarsRegex(benchmark::State& state) {
  std::vector<RouteSpec> specs(1);
  specs[0].uris = {"/api/*"};
  specs[0].vars = *Expr::compile(nlohmann::json::parse(
      R"([["uri", "~~", "^/api/v[0-9]+/"], ["remote_addr", "ipmatch", "10.0.0.0/8"]])"));
  const RouteTable table = RouteTable::build(std::move(specs)).value();
  const Request req("/api/v2/users/17", "www.example.com");
  run(state, table, req, true);
}

BENCHMARK(BM_ExactNearEnd)->Arg(10)->Arg(1000)->Arg(100000);
BENCHMARK(BM_PrefixNearEnd)->Arg(10)->Arg(1000)->Arg(100000);
BENCHMARK(BM_HostNearEnd)->Arg(10)->Arg(1000)->Arg(100000);
BENCHMARK(BM_Miss)->Arg(10)->Arg(1000)->Arg(100000);
BENCHMARK(BM_VarsRegex);

}  // namespace
}  // namespace sluice::router
