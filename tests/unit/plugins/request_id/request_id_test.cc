// request-id: the conf's texts, the id formats, and what goes upstream and to the client.

#include "plugins/request_id/request_id.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "plugins/request_id/id_gen.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::request_id {
namespace {

using plugin::Json;

std::string error_of(const char* conf) {
  auto c = parse(Json::parse(conf));
  return c.is_ok() ? "" : c.status().message();
}

TEST(RequestIdConf, Defaults) {
  auto c = parse(Json::object());
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->header_name, "X-Request-Id");
  EXPECT_TRUE(c->include_in_response);
  EXPECT_EQ(c->algorithm, Algorithm::kUuid);
  EXPECT_EQ(c->length, 16u);
  EXPECT_EQ(c->char_set, "abcdefghijklmnopqrstuvwxyzABCDEFGHIGKLMNOPQRSTUVWXYZ0123456789");
}

TEST(RequestIdConf, ErrorTexts) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"header_name": 1})",
       R"(property "header_name" validation failed: wrong type: expected string, got number)"},
      {R"({"include_in_response": "yes"})",
       R"(property "include_in_response" validation failed: wrong type: expected boolean, got string)"},
      {R"({"algorithm": "snowflake"})",
       R"(property "algorithm" validation failed: matches none of the enum values)"},
      {R"({"range_id": {"length": 5}})",
       R"(property "range_id" validation failed: property "length" validation failed: expected 5 to be at least 6)"},
      {R"({"range_id": {"char_set": "abc"}})",
       R"(property "range_id" validation failed: property "char_set" validation failed: string too short, expected at least 6, got 3)"},
      {R"({"range_id": []})",
       R"(property "range_id" validation failed: wrong type: expected object, got table)"},
      {R"({"header_name": "X Id"})",
       R"(property "header_name" validation failed: "X Id" is not an HTTP header name)"},
  };
  for (const auto& [conf, text] : cases) {
    EXPECT_EQ(error_of(conf), text) << conf;
  }
}

bool all_in(const std::string& s, std::string_view set) {
  return s.find_first_not_of(set) == std::string::npos;
}

TEST(RequestIdGen, UuidIsVersion4) {
  Rng rng;
  for (int i = 0; i < 1000; ++i) {
    std::string id;
    append_uuid(rng, &id);
    ASSERT_EQ(id.size(), 36u);
    EXPECT_EQ(id[8], '-');
    EXPECT_EQ(id[13], '-');
    EXPECT_EQ(id[18], '-');
    EXPECT_EQ(id[23], '-');
    EXPECT_EQ(id[14], '4');
    EXPECT_NE(std::string_view("89ab").find(id[19]), std::string_view::npos) << id;
    EXPECT_TRUE(all_in(id, "0123456789abcdef-")) << id;
  }
}

TEST(RequestIdGen, NanoidRangeIdKsuid) {
  Rng rng;
  std::string n, r, k;
  append_nanoid(rng, &n);
  EXPECT_EQ(n.size(), 21u);
  EXPECT_TRUE(all_in(n, "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict"));
  append_range_id(rng, "abcdef", 40, &r);
  EXPECT_EQ(r.size(), 40u);
  EXPECT_TRUE(all_in(r, "abcdef"));
  append_ksuid(rng, 1400000000 + 1, &k);
  EXPECT_EQ(k.size(), 27u);
  EXPECT_TRUE(all_in(k, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"));
  // A KSUID sorts by its time: a later second gives a larger id.
  std::string later;
  append_ksuid(rng, 1400000000 + 100000, &later);
  EXPECT_LT(k.substr(0, 6), later.substr(0, 6));
}

TEST(RequestIdGen, RangeIdUsesEveryCharacter) {
  Rng rng;
  std::string r;
  append_range_id(rng, "abcdefg", 7000, &r);
  for (char c : std::string("abcdefg")) {
    EXPECT_GT(std::count(r.begin(), r.end(), c), 800) << c;  // about 1000 each
  }
}

TEST(RequestIdGen, ThreadsDrawDistinctIds) {
  std::vector<std::vector<std::string>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&got, t] {
      for (int i = 0; i < 25000; ++i) {
        std::string id;
        append_uuid(thread_rng(), &id);
        got[t].push_back(std::move(id));
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  std::set<std::string> all;
  for (const auto& v : got) {
    all.insert(v.begin(), v.end());
  }
  EXPECT_EQ(all.size(), 100000u);
}

RequestId make_plugin(const char* conf) {
  auto c = parse(Json::parse(conf));
  EXPECT_TRUE(c.is_ok()) << conf;
  return RequestId(std::move(c).value());
}

const std::string* edit(const plugin::HeaderEdits& e, std::string_view name) {
  const std::string* v = nullptr;
  return e.lookup(name, &v) ? v : nullptr;
}

TEST(RequestId, MakesAnIdForUpstreamAndClient) {
  RequestId p = make_plugin("{}");
  router::testing::FakeRequest req("GET", "/", "a.com");
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  EXPECT_EQ(p.rewrite(ctx), plugin::Action::kContinue);
  const std::string* up = edit(ctx.upstream.headers, "X-Request-Id");
  const std::string* down = edit(ctx.resp.headers, "X-Request-Id");
  ASSERT_NE(up, nullptr);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(up->size(), 36u);
  EXPECT_EQ(*up, *down);
  EXPECT_EQ(p.phases(), plugin::phase_bit(plugin::Phase::kRewrite) |
                            plugin::phase_bit(plugin::Phase::kHeaderFilter));
}

TEST(RequestId, KeepsTheClientsId) {
  RequestId p = make_plugin(R"({"header_name": "X-Trace"})");
  router::testing::FakeRequest req("GET", "/", "a.com", {{"x-trace", "abc"}});
  plugin::Context ctx;
  ctx.req = &req.head;
  p.rewrite(ctx);
  EXPECT_TRUE(ctx.upstream.headers.empty());  // forwarded as it came
  ASSERT_NE(edit(ctx.resp.headers, "X-Trace"), nullptr);
  EXPECT_EQ(*edit(ctx.resp.headers, "X-Trace"), "abc");
}

TEST(RequestId, ReplacesAnEmptyId) {
  RequestId p = make_plugin("{}");
  router::testing::FakeRequest req("GET", "/", "a.com", {{"X-Request-Id", ""}});
  plugin::Context ctx;
  ctx.req = &req.head;
  p.rewrite(ctx);
  ASSERT_NE(edit(ctx.upstream.headers, "X-Request-Id"), nullptr);
  EXPECT_EQ(edit(ctx.upstream.headers, "X-Request-Id")->size(), 36u);
}

TEST(RequestId, NotInResponse) {
  RequestId p = make_plugin(R"({"include_in_response": false, "algorithm": "nanoid"})");
  router::testing::FakeRequest req("GET", "/", "a.com");
  plugin::Context ctx;
  ctx.req = &req.head;
  p.rewrite(ctx);
  EXPECT_TRUE(ctx.resp.headers.empty());
  EXPECT_EQ(edit(ctx.upstream.headers, "X-Request-Id")->size(), 21u);
  EXPECT_EQ(p.phases(), plugin::phase_bit(plugin::Phase::kRewrite));
}

TEST(RequestId, UpstreamsOwnIdWins) {
  RequestId p = make_plugin("{}");
  router::testing::FakeRequest req("GET", "/", "a.com");
  plugin::Context ctx;
  ctx.req = &req.head;
  p.rewrite(ctx);
  http::ResponseHead up;
  up.status = 200;
  up.headers[up.num_headers++] = http::Header{"x-request-id", "from-upstream"};
  ctx.upstream_resp = &up;
  p.header_filter(ctx);
  EXPECT_EQ(*edit(ctx.resp.headers, "X-Request-Id"), "from-upstream");
  // An empty one does not count.
  plugin::Context ctx2;
  ctx2.req = &req.head;
  p.rewrite(ctx2);
  const std::string ours = *edit(ctx2.resp.headers, "X-Request-Id");
  http::ResponseHead up2;
  up2.headers[up2.num_headers++] = http::Header{"X-Request-Id", ""};
  ctx2.upstream_resp = &up2;
  p.header_filter(ctx2);
  EXPECT_EQ(*edit(ctx2.resp.headers, "X-Request-Id"), ours);
}

TEST(RequestId, RangeIdConf) {
  RequestId p =
      make_plugin(R"({"algorithm": "range_id", "range_id": {"char_set": "xyz123", "length": 10}})");
  std::string id;
  p.make_id(&id);
  EXPECT_EQ(id.size(), 10u);
  EXPECT_TRUE(all_in(id, "xyz123"));
}

}  // namespace
}  // namespace sluice::plugins::request_id
