// proxy-cache's hooks on a memory zone: the key, a miss that fills, the hit that follows
// (its fields and body), what is not stored, PURGE.

#include "plugins/proxy_cache/proxy_cache.h"

#include <gtest/gtest.h>

#include "io/event_loop.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::proxy_cache {
namespace {

using plugin::Action;
using plugin::Json;
using Headers = std::initializer_list<std::pair<std::string_view, std::string_view>>;

class ProxyCachePlugin : public ::testing::Test {
 protected:
  ProxyCachePlugin() { worker_.loop = &loop_; }

  std::shared_ptr<const ProxyCache> make(const char* conf) {
    auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared_});
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return std::static_pointer_cast<const ProxyCache>(*p);
  }

  struct Request {
    Request(std::string_view method, std::string_view target, Headers h = {})
        : req(method, target, "example.com", h) {
      ctx.req = &req.head;
      ctx.match = req.ctx;
    }
    router::testing::FakeRequest req;
    plugin::Context ctx;
  };

  Action access(const ProxyCache& p, Request& r) {
    r.ctx.worker = &worker_;
    return p.access(r.ctx);
  }
  // The upstream's answer through header_filter and body_filter, then the log phase.
  void respond(const ProxyCache& p, Request& r, int status, Headers fields,
               std::initializer_list<std::string_view> pieces) {
    http::ResponseHead head;
    head.status = status;
    for (const auto& [n, v] : fields) {
      head.headers[head.num_headers++] = {n, v};
    }
    r.ctx.req = nullptr;
    r.ctx.match.req = nullptr;
    r.ctx.upstream_resp = &head;
    r.ctx.status = status;
    p.header_filter(r.ctx);
    r.ctx.upstream_resp = nullptr;
    size_t i = 0;
    for (std::string_view piece : pieces) {
      plugin::BodyPiece bp(piece, ++i == pieces.size(), &r.ctx.body_buffer);
      p.body_filter(r.ctx, bp);
    }
    p.log(r.ctx);
  }
  static std::string status_of(const Request& r) {
    const std::string* v = nullptr;
    r.ctx.resp.headers.lookup("Apisix-Cache-Status", &v);
    return v != nullptr ? *v : "";
  }
  static std::string field(const Request& r, std::string_view name) {
    for (const http::Header& h : r.ctx.reply_fields) {
      if (http::iequals(h.name, name)) {
        return std::string(h.value);
      }
    }
    return "<none>";
  }
  static std::string body(Request& r) {
    std::string out;
    std::string_view piece;
    while (r.ctx.reply_source->next(&piece) == plugin::BodySource::Read::kData) {
      out.append(piece);
    }
    return out;
  }

  io::EventLoop loop_;
  plugin::WorkerLocal worker_;
  plugin::Shared shared_;
};

constexpr char kMemory[] = R"({"cache_strategy":"memory","cache_zone":"memory_cache"})";

TEST_F(ProxyCachePlugin, KeyJoinsVariablesAndLiterals) {
  auto p = make(R"({"cache_strategy":"memory","cache_zone":"memory_cache",
                   "cache_key":["$host","--","$uri","$arg_a","$http_x_v","$nothing"]})");
  Request r("GET", "/p/../q?a=1&b=2", {{"X-V", "v"}});
  std::string key;
  p->build_key(r.ctx, &key);
  EXPECT_EQ(key, "example.com--/q1v");
  auto d = make(kMemory);
  d->build_key(r.ctx, &key);
  EXPECT_EQ(key, "example.com/p/../q?a=1&b=2");  // $host$request_uri
}

TEST_F(ProxyCachePlugin, AMissFillsAndTheNextRequestHits) {
  auto p = make(kMemory);
  Request miss("GET", "/a");
  ASSERT_EQ(access(*p, miss), Action::kContinue);
  EXPECT_EQ(status_of(miss), "MISS");
  respond(*p, miss, 200,
          {{"Content-Type", "text/plain"},
           {"X-A", "1"},
           {"Connection", "close"},
           {"X-RateLimit-Remaining", "3"}},
          {"hel", "lo"});
  Request hit("GET", "/a");
  ASSERT_EQ(access(*p, hit), Action::kReply);
  EXPECT_EQ(hit.ctx.reply_status, 200);
  EXPECT_EQ(hit.ctx.reply_length, 5);
  EXPECT_EQ(status_of(hit), "HIT");
  EXPECT_EQ(field(hit, "X-A"), "1");
  EXPECT_EQ(field(hit, "Age"), "0");
  EXPECT_EQ(field(hit, "Connection"), "<none>");
  EXPECT_EQ(field(hit, "X-RateLimit-Remaining"), "<none>");
  EXPECT_EQ(body(hit), "hello");
  p->log(hit.ctx);
  EXPECT_EQ(hit.ctx.held, nullptr);
}

TEST_F(ProxyCachePlugin, WhatIsNotStored) {
  auto p = make(R"({"cache_strategy":"memory","cache_zone":"memory_cache",
                   "no_cache":["$arg_nc"],"cache_http_status":[200]})");
  auto again = [&](std::string_view target) {
    Request r("GET", target);
    access(*p, r);
    bool hit = r.ctx.reply_source != nullptr;
    p->log(r.ctx);
    return hit;
  };
  Request a("GET", "/s");
  access(*p, a);
  respond(*p, a, 404, {}, {"x"});  // a status not listed
  EXPECT_FALSE(again("/s"));
  Request b("GET", "/n?nc=1");
  access(*p, b);
  respond(*p, b, 200, {}, {"x"});  // no_cache
  EXPECT_FALSE(again("/n?nc=1"));
  Request c("GET", "/c");
  access(*p, c);
  respond(*p, c, 200, {{"Cache-Control", "private, max-age=60"}}, {"x"});
  EXPECT_FALSE(again("/c"));
  Request d("GET", "/k");
  access(*p, d);
  respond(*p, d, 200, {{"Set-Cookie", "a=1"}}, {"x"});
  EXPECT_FALSE(again("/k"));
  Request e("GET", "/ok?nc=0");
  access(*p, e);
  respond(*p, e, 200, {}, {"x"});
  EXPECT_TRUE(again("/ok?nc=0"));
}

TEST_F(ProxyCachePlugin, BypassMethodsAndPurge) {
  auto p = make(R"({"cache_strategy":"memory","cache_zone":"memory_cache",
                   "cache_bypass":["$arg_bypass"]})");
  Request fill("GET", "/x");
  access(*p, fill);
  respond(*p, fill, 200, {}, {"body"});
  Request by("GET", "/x?bypass=1");
  EXPECT_EQ(access(*p, by), Action::kContinue);
  EXPECT_EQ(status_of(by), "BYPASS");
  p->log(by.ctx);
  Request post("POST", "/x");
  EXPECT_EQ(access(*p, post), Action::kContinue);
  EXPECT_EQ(status_of(post), "MISS");
  p->log(post.ctx);
  Request purge("PURGE", "/x");
  ASSERT_EQ(access(*p, purge), Action::kReply);
  EXPECT_EQ(purge.ctx.reply_status, 200);
  p->log(purge.ctx);
  Request twice("PURGE", "/x");
  ASSERT_EQ(access(*p, twice), Action::kReply);
  EXPECT_EQ(twice.ctx.reply_status, 404);
  p->log(twice.ctx);
}

TEST_F(ProxyCachePlugin, CacheControlOnTheRequest) {
  auto p = make(R"({"cache_strategy":"memory","cache_zone":"memory_cache",
                   "cache_control":true})");
  Request fill("GET", "/cc");
  access(*p, fill);
  respond(*p, fill, 200, {{"Cache-Control", "max-age=60"}}, {"b"});
  Request no_store("GET", "/cc", {{"Cache-Control", "no-store"}});
  access(*p, no_store);
  EXPECT_EQ(status_of(no_store), "BYPASS");
  p->log(no_store.ctx);
  Request fresh("GET", "/cc", {{"Cache-Control", "min-fresh=600"}});
  EXPECT_EQ(access(*p, fresh), Action::kContinue);
  EXPECT_EQ(status_of(fresh), "STALE");
  p->log(fresh.ctx);
  Request only("GET", "/none", {{"Cache-Control", "only-if-cached"}});
  ASSERT_EQ(access(*p, only), Action::kReply);
  EXPECT_EQ(only.ctx.reply_status, 504);
  p->log(only.ctx);
  // Without a max-age (or Expires) the response is not stored under cache_control.
  Request bare("GET", "/bare");
  access(*p, bare);
  respond(*p, bare, 200, {}, {"b"});
  Request again("GET", "/bare");
  EXPECT_EQ(access(*p, again), Action::kContinue);
  p->log(again.ctx);
}

}  // namespace
}  // namespace sluice::plugins::proxy_cache
