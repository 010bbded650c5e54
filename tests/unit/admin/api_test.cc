// The Admin API over a real embedded store in a temporary directory.

#include "admin/api.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

namespace sluice::admin {
namespace {

using config::Json;

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "sluice-admin-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    auto s = store::open_embedded_with_clock(dir_, [this] { return now_; });
    ASSERT_TRUE(s.is_ok()) << s.status().message();
    store_ = std::move(s).value();
    config::AdminConfig conf;
    conf.keys = {{"admin", "k", config::AdminRole::kAdmin}};
    auto auth = Auth::create(conf);
    api_ = std::make_unique<Api>(
        std::move(auth).value(), *store_, index_, [this] { return now_; }, [this] { absorb(); });
  }
  void TearDown() override {
    api_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void absorb() {
    for (const auto& c : store_->take_changes()) {
      ASSERT_TRUE(index_.apply(c).is_ok());
    }
  }

  server::AdminResponse call(const std::string& method, const std::string& target,
                             const std::string& body = "") {
    server::AdminRequest r;
    r.method = method;
    size_t q = target.find('?');
    r.path = target.substr(0, q);
    r.query = q == std::string::npos ? "" : target.substr(q + 1);
    r.body = body;
    r.headers = {{"x-api-key", "k"}};
    router::parse_ip("127.0.0.1", &r.peer);
    return api_->handle(r);
  }
  static Json json(const server::AdminResponse& r) { return Json::parse(r.body); }
  static std::string error(const server::AdminResponse& r) {
    return json(r).value("error_msg", std::string());
  }

  std::string dir_;
  int64_t now_ = 1700000000;
  std::unique_ptr<store::ConfigStore> store_;
  store::ConfigIndex index_;
  std::unique_ptr<Api> api_;
};

constexpr const char* kRoute = R"({"uri":"/a","upstream":{"nodes":{"127.0.0.1:1980":1}}})";

TEST_F(ApiTest, PutCreatesThenReplacesKeepingCreateTime) {
  auto r = call("PUT", "/apisix/admin/routes/1", kRoute);
  ASSERT_EQ(r.status, 201) << r.body;
  Json v = json(r);
  EXPECT_EQ(v["key"], "/apisix/routes/1");
  EXPECT_EQ(v["value"]["id"], "1");
  EXPECT_EQ(v["value"]["create_time"], now_);
  now_ += 10;
  r = call("PUT", "/apisix/admin/routes/1", R"({"id":1,"uri":"/b","upstream_id":"u"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error(r), "failed to fetch upstream info by upstream id [u], response code: 404");
  r = call("PUT", "/apisix/admin/routes/1", R"({"id":1,"uri":"/b","plugins":{}})");
  ASSERT_EQ(r.status, 200) << r.body;
  v = json(r)["value"];
  EXPECT_EQ(v["id"], "1");
  EXPECT_EQ(v["create_time"], now_ - 10);
  EXPECT_EQ(v["update_time"], now_);
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].second, "v3");
}

TEST_F(ApiTest, GetOneAndListShapes) {
  EXPECT_EQ(call("GET", "/apisix/admin/routes/1").body, "{\"message\":\"Key not found\"}\n");
  ASSERT_EQ(call("PUT", "/apisix/admin/routes/1", kRoute).status, 201);
  ASSERT_EQ(call("PUT", "/apisix/admin/routes/2", R"({"uri":"/b","plugins":{},"name":"bee",
      "labels":{"env":"prod"}})")
                .status,
            201);
  Json one = json(call("GET", "/apisix/admin/routes/2"));
  EXPECT_EQ(one["createdIndex"], 2);
  EXPECT_EQ(one["modifiedIndex"], 2);
  Json list = json(call("GET", "/apisix/admin/routes"));
  EXPECT_EQ(list["total"], 2);
  EXPECT_EQ(list["list"][0]["key"], "/apisix/routes/1");
  EXPECT_EQ(json(call("GET", "/apisix/admin/routes?name=be"))["total"], 1);
  EXPECT_EQ(json(call("GET", "/apisix/admin/routes?label=env:prod"))["total"], 1);
  EXPECT_EQ(json(call("GET", "/apisix/admin/routes?label=env:dev"))["total"], 0);
  EXPECT_EQ(json(call("GET", "/apisix/admin/routes?uri=/a"))["total"], 1);
  Json page = json(call("GET", "/apisix/admin/routes?page=2&page_size=10"));
  EXPECT_EQ(page["total"], 2);
  EXPECT_TRUE(page["list"].empty());
  EXPECT_EQ(call("GET", "/apisix/admin/routes?page_size=5").status, 400);
}

TEST_F(ApiTest, PostGeneratesTwentyDigitIds) {
  auto r = call("POST", "/apisix/admin/upstreams", R"({"nodes":{"127.0.0.1:1":1}})");
  ASSERT_EQ(r.status, 201) << r.body;
  std::string id = json(r)["value"]["id"];
  EXPECT_EQ(id.size(), 20u);
  EXPECT_EQ(id, "00000000000000000001");
  r = call("POST", "/apisix/admin/upstreams", R"({"id":"x","nodes":{"127.0.0.1:1":1}})");
  EXPECT_EQ(error(r), "wrong upstream id, do not need it");
  r = call("POST", "/apisix/admin/consumers", R"({"username":"jack"})");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(error(r), "not supported `POST` method for consumer");
}

TEST_F(ApiTest, RejectedWritesChangeNothing) {
  ASSERT_EQ(call("PUT", "/apisix/admin/routes/1", kRoute).status, 201);
  int64_t rev = store_->revision();
  static const std::string deep(200, '[');
  struct Case {
    const char* method;
    const char* target;
    const char* body;
    int status;
    const char* error_prefix;
  } cases[] = {
      {"PUT", "/apisix/admin/routes/1", "{", 400, "invalid request body: "},
      {"PUT", "/apisix/admin/routes/1", "[1]", 400, "invalid configuration: wrong type"},
      {"PUT", "/apisix/admin/routes/2", R"({"id":"3","uri":"/x","plugins":{}})", 400,
       "wrong route id"},
      {"PUT", "/apisix/admin/routes", R"({"uri":"/x","plugins":{}})", 400, "missing route id"},
      {"PUT", "/apisix/admin/routes", R"({"id":0,"uri":"/x","plugins":{}})", 400,
       "invalid configuration: property \"id\" validation failed"},
      {"PUT", "/apisix/admin/routes/1", R"({"uri":"/x","plugins":{},"create_time":1})", 400,
       "the property is forbidden:  create_time"},
      {"PUT", "/apisix/admin/routes/1",
       R"({"uri":"/x","upstream":{"nodes":{"127.0.0.1:1":1},"update_time":1}})", 400,
       "the property is forbidden:  upstream.update_time"},
      {"POST", "/apisix/admin/routes",
       R"({"uri":"/x","plugins":{"create_time":1,"prometheus":{}}})", 400,
       "the property is forbidden:  plugins.create_time"},
      {"PATCH", "/apisix/admin/routes/1/upstream", R"({"nodes":{"127.0.0.1:1":1},"create_time":1})",
       400, "the property is forbidden:  upstream.create_time"},
      {"PATCH", "/apisix/admin/routes/1/create_time", "5", 400,
       "the property is forbidden:  create_time"},
      {"PUT", "/apisix/admin/routes/1", "{\"uri\":\"/x\",\x01\"plugins\":{}}", 400,
       "invalid request body"},  // raw control bytes are taken inside strings only
      // Credentials (APISIX 3.7+; more in credentials_test.cc): their consumer must exist.
      {"PUT", "/apisix/admin/consumers/jack/credentials/c1", R"({"plugins":{}})", 404,
       "consumer not found"},
      {"POST", "/apisix/admin/consumers/jack/credentials", R"({"plugins":{}})", 405,
       "not supported `POST` method for credential"},
      {"PATCH", "/apisix/admin/consumers/jack/credentials/c1", "{}", 405,
       "not supported `PATCH` method for credential"},
      {"PUT", "/apisix/admin/routes/1", R"({"uri":"/x","plugins":{},"bogus":1})", 400,
       "invalid configuration: additional properties forbidden, found bogus"},
      {"PUT", "/apisix/admin/routes/1", R"({"uri":"/x","plugins":{"nope":{}}})", 400,
       "unknown plugin [nope]"},
      {"PUT", "/apisix/admin/routes/1", R"({"uri":"/x","plugins":{},"vars":[["a","~~","("]]})", 400,
       "failed to validate the 'vars' expression: "},
      {"PUT", "/apisix/admin/routes/1?ttl=0", kRoute, 400, "invalid argument ttl"},
      {"PATCH", "/apisix/admin/routes/1", R"({"uri":5})", 400,
       "invalid configuration: property \"uri\" validation failed"},
      {"PATCH", "/apisix/admin/routes/1/uri/x", "1", 400, "invalid sub path"},
      {"PATCH", "/apisix/admin/routes/1", R"({"id":"2"})", 400, "wrong route id"},
      {"PUT", "/apisix/admin/routes/1", deep.c_str(), 400, "invalid request body: nested deeper"},
      {"PUT", "/apisix/admin/widgets/1", kRoute, 404, "Unsupported resource type: widgets"},
      {"PUT", "/apisix/admin/routes/..", kRoute, 400, "invalid path"},
      {"PUT", "/apisix/admin/routes//1", kRoute, 400, "invalid path"},
      {"POST", "/apisix/admin/routes//", kRoute, 400, "invalid path"},
      {"PATCH", "/apisix/admin/stream_routes/1", "{}", 405,
       "not supported `PATCH` method for stream_route"},
  };
  for (const auto& c : cases) {
    auto r = call(c.method, c.target, c.body);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.target << " " << r.body;
    EXPECT_EQ(error(r).rfind(c.error_prefix, 0), 0u) << c.target << ": " << r.body;
    EXPECT_EQ(store_->revision(), rev) << c.target;
  }
  EXPECT_EQ(json(call("GET", "/apisix/admin/routes/1"))["value"]["uri"], "/a");
}

// lua-cjson takes raw control characters inside strings; APISIX stores them as sent.
TEST_F(ApiTest, RawControlCharactersInStringsAreAccepted) {
  auto r = call("PUT", "/apisix/admin/routes/1",
                "{\"uri\":\"/x\",\"plugins\":{},\"desc\":\"line 1\nline 2\tend\"}");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json(call("GET", "/apisix/admin/routes/1"))["value"]["desc"], "line 1\nline 2\tend");
  r = call("PATCH", "/apisix/admin/routes/1", "{\"desc\":\"a\rb\"}");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json(r)["value"]["desc"], "a\rb");
}

TEST_F(ApiTest, PatchMergesAndSubPathReplaces) {
  ASSERT_EQ(call("PUT", "/apisix/admin/routes/1", kRoute).status, 201);
  auto r = call("PATCH", "/apisix/admin/routes/1", R"({"labels":{"a":"1"},"methods":["GET"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  r = call("PATCH", "/apisix/admin/routes/1", R"({"labels":{"b":"2"},"methods":null})");
  Json v = json(r)["value"];
  EXPECT_EQ(v["labels"], Json::parse(R"({"a":"1","b":"2"})"));
  EXPECT_FALSE(v.contains("methods"));
  r = call("PATCH", "/apisix/admin/routes/1/upstream/nodes", R"({"127.0.0.2:80":2})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json(r)["value"]["upstream"]["nodes"], Json::parse(R"({"127.0.0.2:80":2})"));
  EXPECT_EQ(call("PATCH", "/apisix/admin/routes/9", "{}").status, 404);
}

TEST_F(ApiTest, ReferencesBlockDeleteUnlessForced) {
  ASSERT_EQ(call("PUT", "/apisix/admin/upstreams/u1", R"({"nodes":{"127.0.0.1:1":1}})").status,
            201);
  ASSERT_EQ(call("PUT", "/apisix/admin/services/s1", R"({"upstream_id":"u1"})").status, 201);
  ASSERT_EQ(call("PUT", "/apisix/admin/routes/1", R"({"uri":"/a","service_id":"s1"})").status, 201);
  auto r = call("DELETE", "/apisix/admin/upstreams/u1");
  EXPECT_EQ(error(r), "can not delete this upstream, service [s1] is still using it now");
  r = call("DELETE", "/apisix/admin/services/s1");
  EXPECT_EQ(error(r), "can not delete this service directly, route [1] is still using it now");
  r = call("DELETE", "/apisix/admin/services/s1?force=true");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "{\"deleted\":\"1\",\"key\":\"/apisix/services/s1\"}\n");
  EXPECT_EQ(call("DELETE", "/apisix/admin/upstreams/u1").status, 200);
  EXPECT_EQ(call("DELETE", "/apisix/admin/upstreams/u1").status, 404);
}

TEST_F(ApiTest, TtlMakesTheObjectExpire) {
  ASSERT_EQ(call("PUT", "/apisix/admin/routes/1?ttl=5", kRoute).status, 201);
  EXPECT_EQ(call("GET", "/apisix/admin/routes/1").status, 200);
  now_ += 6;
  EXPECT_EQ(call("GET", "/apisix/admin/routes/1").status, 404);
  ASSERT_TRUE(store_->expire(now_).is_ok());
  absorb();
  EXPECT_EQ(index_.route_count(), 0u);
}

TEST_F(ApiTest, ConsumersAreKnownByUsername) {
  auto r = call("PUT", "/apisix/admin/consumers", R"({"username":"jack"})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json(r)["key"], "/apisix/consumers/jack");
  r = call("PUT", "/apisix/admin/consumers/jill", R"({"username":"jack"})");
  EXPECT_EQ(error(r), "wrong username");
  r = call("PUT", "/apisix/admin/consumers/jack", R"({"group_id":"g"})");
  EXPECT_EQ(error(r),
            "failed to fetch consumer group info by consumer group id [g], response code: 404");
}

TEST_F(ApiTest, PluginsEndpoints) {
  auto r = call("GET", "/apisix/admin/plugins/list");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body,
            "[\"ip-restriction\",\"ua-restriction\",\"referer-restriction\",\"multi-auth\",\"hmac-"
            "auth\",\"basic-auth\",\"jwt-auth\",\"key-auth\",\"consumer-restriction\",\"proxy-"
            "mirror\",\"proxy-rewrite\",\"limit-count\",\"traffic-split\",\"redirect\",\"response-"
            "rewrite\",\"prometheus\"]\n");
  r = call("GET", "/apisix/admin/plugins");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json(r), Json::parse(R"({"ip-restriction": {"priority": 3000},
                                     "ua-restriction": {"priority": 2999},
                                     "referer-restriction": {"priority": 2990},
                                     "multi-auth": {"priority": 2600},
                                     "hmac-auth": {"priority": 2530},
                                     "basic-auth": {"priority": 2520},
                                     "jwt-auth": {"priority": 2510},
                                     "key-auth": {"priority": 2500},
                                     "consumer-restriction": {"priority": 2400},
                                     "proxy-mirror": {"priority": 1010},
                                     "proxy-rewrite": {"priority": 1008},
                                     "limit-count": {"priority": 1002},
                                     "traffic-split": {"priority": 966},
                                     "redirect": {"priority": 900},
                                     "response-rewrite": {"priority": 899},
                                     "prometheus": {"priority": 500}})"));
  r = call("GET", "/apisix/admin/plugins/limit-count");
  ASSERT_EQ(r.status, 200) << r.body;
  Json schema = json(r);
  EXPECT_EQ(schema["type"], "object");
  EXPECT_EQ(schema["required"], Json::parse(R"(["count", "time_window"])"));
  EXPECT_EQ(schema["properties"]["count"]["exclusiveMinimum"], 0);
  EXPECT_EQ(schema["properties"]["policy"]["enum"],
            Json::parse(R"(["local", "redis", "redis-cluster"])"));
  r = call("GET", "/apisix/admin/plugins/prometheus");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json(r)["properties"]["prefer_name"]["type"], "boolean");
  r = call("GET", "/apisix/admin/plugins/openid-connect");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(error(r), "plugin not found: openid-connect");
  r = call("POST", "/apisix/admin/plugins/list");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(error(r), "not supported `POST` method for plugins");
  r = call("PUT", "/apisix/admin/plugins/reload");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "done");
}

TEST_F(ApiTest, PluginsReloadRunsTheReloader) {
  int reloads = 0;
  common::Status next = common::Status::ok();
  api_->set_plugin_reload([&] {
    ++reloads;
    return next;
  });
  auto r = call("PUT", "/apisix/admin/plugins/reload");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "done");
  next = common::Status::error("config.yaml: plugins: expected a list");
  r = call("PUT", "/apisix/admin/plugins/reload");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error(r), "failed to reload plugins: config.yaml: plugins: expected a list");
  EXPECT_EQ(reloads, 2);
}

// The built-in plugins' confs are checked on write, with APISIX's texts.
TEST_F(ApiTest, RoutesWithBuiltInPlugins) {
  auto r = call("PUT", "/apisix/admin/routes/1",
                R"({"uri":"/a","upstream":{"nodes":{"127.0.0.1:1980":1}},
                    "plugins":{"limit-count":{"count":2,"time_window":60},"prometheus":{}}})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json(r)["value"]["plugins"]["limit-count"]["count"], 2);
  r = call("PUT", "/apisix/admin/routes/2",
           R"({"uri":"/b","plugins":{"limit-count":{"count":0,"time_window":60}}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error(r),
            "failed to check the configuration of plugin limit-count err: property \"count\" "
            "validation failed: expected 0 to be greater than 0");
  r = call("PUT", "/apisix/admin/global_rules/1",
           R"({"plugins":{"prometheus":{"prefer_name":1}}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error(r),
            "failed to check the configuration of plugin prometheus err: property "
            "\"prefer_name\" validation failed: wrong type: expected boolean, got number");
  r = call("PUT", "/apisix/admin/global_rules/1", R"({"plugins":{"prometheus":{}}})");
  EXPECT_EQ(r.status, 201) << r.body;
}

}  // namespace
}  // namespace sluice::admin

namespace sluice::admin {
namespace {

// Fuzz findings F8-F10 (docs/testing.md).
TEST_F(ApiTest, FloatIdsAreIdsEverywhere) {
  auto r = call("PUT", "/apisix/admin/routes/1", R"({"uri":"/a","upstream_id":1.0})");
  EXPECT_EQ(error(r), "failed to fetch upstream info by upstream id [1], response code: 404");
  r = call("PUT", "/apisix/admin/routes/3", R"({"id":3.0,"uri":"/a","plugins":{}})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json(r)["value"]["id"], "3");
  EXPECT_EQ(call("PATCH", "/apisix/admin/routes/3", R"({"desc":"x"})").status, 200);
  ASSERT_EQ(call("PUT", "/apisix/admin/upstreams/1", R"({"nodes":{"127.0.0.1:1":1}})").status, 201);
  ASSERT_EQ(call("PUT", "/apisix/admin/routes/4", R"({"uri":"/a","upstream_id":1e0})").status, 201);
  EXPECT_EQ(error(call("DELETE", "/apisix/admin/upstreams/1")),
            "can not delete this upstream, route [4] is still using it now");
}

TEST_F(ApiTest, PostStepsPastAnIdAlreadyTaken) {
  ASSERT_EQ(
      call("PUT", "/apisix/admin/upstreams/00000000000000000002", R"({"nodes":{"127.0.0.1:1":1}})")
          .status,
      201);
  auto r = call("POST", "/apisix/admin/upstreams", R"({"nodes":{"127.0.0.1:1":1}})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json(r)["value"]["id"], "00000000000000000003");
}

TEST_F(ApiTest, SecretIdInTheBody) {
  auto r = call("PUT", "/apisix/admin/secrets/vault/1",
                R"({"id":"vault/1","uri":"http://127.0.0.1:8200","prefix":"kv","token":"t"})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json(r)["key"], "/apisix/secrets/vault/1");
  EXPECT_EQ(call("PUT", "/apisix/admin/consumers", R"({"username":7})").status, 400);
}

}  // namespace
}  // namespace sluice::admin

namespace sluice::admin {
namespace {

// The Admin API's route check names a bad `vars` expression once, as APISIX does.
TEST_F(ApiTest, BadVarsErrorIsPrefixedOnce) {
  auto r = call(
      "PUT", "/apisix/admin/routes/1",
      R"({"uri":"/x","upstream":{"nodes":{"127.0.0.1:1980":1}},"vars":[["arg_a","like","1"]]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(
      error(r),
      R"(failed to validate the 'vars' expression: invalid operator 'like' in ["arg_a","like","1"])");
}

}  // namespace
}  // namespace sluice::admin
