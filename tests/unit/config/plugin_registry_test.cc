#include "config/plugin_registry.h"

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

namespace sluice::config {
namespace plugin_registry_test {

using common::Status;

// A fake plugin: `count` is required, except on a consumer, where `key` is. It fails if it is
// ever shown `_meta`, which check_plugins must strip.
Status check_counted(const Json& conf, PluginUse use) {
  if (conf.contains("_meta")) {
    return Status::error("the checker saw _meta");
  }
  const char* required = use == PluginUse::kConsumer ? "key" : "count";
  if (!conf.contains(required)) {
    return Status::error(std::string("property \"") + required + "\" is required");
  }
  return Status::ok();
}

constexpr PluginInfo kFakes[] = {
    {.name = "fake-counted", .priority = 1002, .stream = false, .check = check_counted},
    {.name = "fake-stream", .priority = 500, .stream = true},
};

struct Case {
  const char* plugins;
  PluginUse use;
  const char* error;  // exact; nullptr = valid
};

void run_cases(const std::vector<Case>& cases, std::span<const PluginInfo> registry) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.plugins);
    Status s = check_plugins(Json::parse(c.plugins), c.use, registry);
    if (c.error == nullptr) {
      EXPECT_TRUE(s.is_ok()) << s.message();
    } else {
      ASSERT_FALSE(s.is_ok());
      EXPECT_EQ(s.message(), c.error);
    }
  }
}

// Restores the default (every built-in plugin enabled) however the test ends: tests in one
// executable share the process, and with it the enabled set.
class EnabledPlugins {
 public:
  explicit EnabledPlugins(const std::vector<std::string>& names)
      : unknown_(set_enabled_plugins(&names)) {}
  ~EnabledPlugins() { set_enabled_plugins(nullptr); }
  const std::vector<std::string>& unknown() const { return unknown_; }

 private:
  std::vector<std::string> unknown_;
};

// Every built-in plugin with APISIX's priority, highest first.
const std::vector<std::pair<std::string, int>> kBuiltins = {
    {"real-ip", 23000},
    {"request-id", 12015},
    {"zipkin", 12011},
    {"opentelemetry", 12009},
    {"fault-injection", 11000},
    {"cors", 4000},
    {"ip-restriction", 3000},
    {"ua-restriction", 2999},
    {"referer-restriction", 2990},
    {"request-validation", 2800},
    {"multi-auth", 2600},
    {"hmac-auth", 2530},
    {"basic-auth", 2520},
    {"jwt-auth", 2510},
    {"key-auth", 2500},
    {"consumer-restriction", 2400},
    {"proxy-cache", 1085},
    {"proxy-mirror", 1010},
    {"proxy-rewrite", 1008},
    {"api-breaker", 1005},
    {"limit-conn", 1003},
    {"limit-count", 1002},
    {"limit-req", 1001},
    {"brotli", 996},
    {"gzip", 995},
    {"traffic-split", 966},
    {"redirect", 900},
    {"response-rewrite", 899},
    {"public-api", 501},
    {"prometheus", 500},
    {"http-logger", 410},
    {"tcp-logger", 405},
    {"syslog", 401},
    {"udp-logger", 400},
    {"file-logger", 399},
};

const std::vector<std::string> kBuiltinNames = [] {
  std::vector<std::string> out;
  for (const auto& [name, priority] : kBuiltins) {
    out.push_back(name);
  }
  return out;
}();

std::vector<std::string> names_of(std::span<const PluginInfo> registry) {
  std::vector<std::string> out;
  for (const PluginInfo& p : registry) {
    out.emplace_back(p.name);
  }
  return out;
}

TEST(PluginRegistry, EnablesEveryBuiltInPluginByDefault) {
  EXPECT_EQ(names_of(all_plugins()), kBuiltinNames);
  for (const auto& [name, priority] : kBuiltins) {
    const PluginInfo* info = find_plugin(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->priority, priority) << name;
  }
  const PluginInfo* lc = find_plugin("limit-count");
  ASSERT_NE(lc, nullptr);
  EXPECT_EQ(lc->priority, 1002);
  EXPECT_FALSE(lc->stream);
  EXPECT_NE(lc->make, nullptr);
  EXPECT_FALSE(lc->schema.empty());
  const PluginInfo* prom = find_plugin("prometheus");
  ASSERT_NE(prom, nullptr);
  EXPECT_EQ(prom->priority, 500);
  EXPECT_NE(prom->make, nullptr);
  EXPECT_EQ(find_plugin("openid-connect"), nullptr);
  EXPECT_EQ(find_plugin("fake-stream", kFakes), &kFakes[1]);
  EXPECT_EQ(find_plugin("fake", kFakes), nullptr);
  EXPECT_EQ(find_plugin("limit-count", kFakes), nullptr);
}

TEST(PluginRegistry, SetEnabledPluginsNarrowsTheSet) {
  const Json limit = Json::parse(R"({"limit-count": {"count": 1, "time_window": 1}})");
  {
    EnabledPlugins only({"prometheus", "nope"});
    EXPECT_EQ(only.unknown(), std::vector<std::string>{"nope"});
    EXPECT_EQ(names_of(all_plugins()), std::vector<std::string>{"prometheus"});
    EXPECT_EQ(find_plugin("limit-count"), nullptr);
    EXPECT_EQ(find_plugin("nope"), nullptr);
    EXPECT_EQ(check_plugins(limit).message(), "unknown plugin [limit-count]");
    EXPECT_TRUE(check_plugins(Json::parse(R"({"prometheus": {}})")));
    EXPECT_EQ(check_plugin_metadata("limit-count", Json::object(), all_plugins()).message(),
              "unknown plugin [limit-count]");
  }
  EXPECT_EQ(names_of(all_plugins()), kBuiltinNames);
  EXPECT_TRUE(check_plugins(limit));
  {
    // An empty list enables nothing; the order of the list does not matter.
    EnabledPlugins none({});
    EXPECT_TRUE(none.unknown().empty());
    EXPECT_TRUE(all_plugins().empty());
    EXPECT_EQ(check_plugins(Json::parse(R"({"prometheus": {}})")).message(),
              "unknown plugin [prometheus]");
  }
  {
    EnabledPlugins both({"prometheus", "limit-count"});
    EXPECT_TRUE(both.unknown().empty());
    EXPECT_EQ(names_of(all_plugins()), (std::vector<std::string>{"limit-count", "prometheus"}));
  }
  EXPECT_EQ(set_enabled_plugins(nullptr), std::vector<std::string>{});
  EXPECT_EQ(all_plugins().size(), kBuiltinNames.size());
}

TEST(CheckPlugins, WithTheBuiltInRegistry) {
  const Case cases[] = {
      {"{}", PluginUse::kHttp, nullptr},
      {R"({"openid-connect": {}})", PluginUse::kHttp, "unknown plugin [openid-connect]"},
      {R"({"key-auth": {"key": "k"}})", PluginUse::kConsumer, nullptr},
      {R"({"key-auth": {}})", PluginUse::kConsumer,
       "failed to check the configuration of plugin key-auth err: property \"key\" is required"},
      {R"({"no-such-plugin": {}})", PluginUse::kConsumer, "unknown plugin [no-such-plugin]"},
      {R"({"a": {"_meta": {"disable": true}}})", PluginUse::kHttp, "unknown plugin [a]"},
      {R"({"a": "x"})", PluginUse::kHttp, R"(invalid plugin conf "x" for plugin [a])"},
      {R"({"a": null})", PluginUse::kHttp, "invalid plugin conf null for plugin [a]"},
      {R"({"limit-count": []})", PluginUse::kHttp,
       "invalid plugin conf [] for plugin [limit-count]"},
      {"[]", PluginUse::kHttp,
       R"(invalid configuration: property "plugins" validation failed: wrong type: expected object, got table)"},
      {R"({"limit-count": {"count": 2, "time_window": 60}, "prometheus": {}})", PluginUse::kHttp,
       nullptr},
      // Neither is a stream plugin in Sluice.
      {R"({"limit-count": {"count": 2, "time_window": 60}})", PluginUse::kStream,
       "unknown plugin [limit-count]"},
      {R"({"prometheus": {}})", PluginUse::kStream, "unknown plugin [prometheus]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.plugins);
    Status s = check_plugins(Json::parse(c.plugins), c.use);
    if (c.error == nullptr) {
      EXPECT_TRUE(s.is_ok()) << s.message();
    } else {
      EXPECT_EQ(s.message(), c.error);
    }
  }
}

// limit-count's conf as APISIX's schema checks it, with APISIX's error texts.
TEST(CheckPlugins, LimitCountConf) {
  const std::string err = "failed to check the configuration of plugin limit-count err: ";
  const std::string enum_err = "validation failed: matches none of the enum values";
  struct LcCase {
    const char* conf;
    std::string error;  // after `err: `; empty = valid
  };
  const LcCase cases[] = {
      {R"({"count": 2, "time_window": 60})", ""},
      {R"({"count": 2000000000000, "time_window": 60, "rejected_code": 503,
           "key": "remote_addr"})",
       ""},
      {R"({"count": 1, "time_window": 1, "key_type": "var_combination",
           "key": "$remote_addr $http_x_user", "rejected_code": 429, "rejected_msg": "slow down",
           "policy": "local", "allow_degradation": true, "show_limit_quota_header": false,
           "group": "g1"})",
       ""},
      {R"({"count": 1, "time_window": 1, "key_type": "constant", "key": "all"})", ""},
      {R"({"count": 1, "time_window": 1, "policy": "redis", "redis_host": "127.0.0.1",
           "redis_port": 6380, "redis_password": "", "redis_database": 1,
           "redis_timeout": 500})",
       ""},
      {R"({"count": 1, "time_window": 1, "policy": "redis-cluster",
           "redis_cluster_nodes": ["127.0.0.1:7000", "127.0.0.1:7001"],
           "redis_cluster_name": "c1"})",
       ""},
      // An integral float is an integer, as in APISIX.
      {R"({"count": 2.0, "time_window": 60})", ""},
      {R"({})", R"(property "count" is required)"},
      {R"({"time_window": 60})", R"(property "count" is required)"},
      {R"({"count": 2})", R"(property "time_window" is required)"},
      {R"({"count": 0, "time_window": 60})",
       R"(property "count" validation failed: expected 0 to be greater than 0)"},
      {R"({"count": -100, "time_window": 60})",
       R"(property "count" validation failed: expected -100 to be greater than 0)"},
      {R"({"count": 2, "time_window": 0})",
       R"(property "time_window" validation failed: expected 0 to be greater than 0)"},
      {R"({"count": "2", "time_window": 60})",
       R"(property "count" validation failed: wrong type: expected integer, got string)"},
      {R"({"count": 1.5, "time_window": 60})",
       R"(property "count" validation failed: wrong type: expected integer, got number)"},
      // jsonschema checks the type before the bound.
      {R"({"count": -1.5, "time_window": 60})",
       R"(property "count" validation failed: wrong type: expected integer, got number)"},
      {R"({"count": 2, "time_window": 60, "key_type": "header"})",
       R"(property "key_type" )" + enum_err},
      {R"({"count": 2, "time_window": 60, "key_type": 1})",
       R"(property "key_type" validation failed: wrong type: expected string, got number)"},
      {R"({"count": 2, "time_window": 60, "policy": "memcached"})",
       R"(property "policy" )" + enum_err},
      {R"({"count": 2, "time_window": 60, "rejected_code": 600})",
       R"(property "rejected_code" validation failed: expected 600 to be at most 599)"},
      {R"({"count": 2, "time_window": 60, "rejected_code": 199})",
       R"(property "rejected_code" validation failed: expected 199 to be at least 200)"},
      {R"({"count": 2, "time_window": 60, "rejected_msg": ""})",
       R"(property "rejected_msg" validation failed: string too short, expected at least 1, got 0)"},
      {R"({"count": 2, "time_window": 60, "show_limit_quota_header": "no"})",
       R"(property "show_limit_quota_header" validation failed: wrong type: expected boolean, got string)"},
      {R"({"count": 2, "time_window": 60, "allow_degradation": 1})",
       R"(property "allow_degradation" validation failed: wrong type: expected boolean, got number)"},
      {R"({"count": 2, "time_window": 60, "key": ""})",
       R"(property "key" validation failed: string too short, expected at least 1, got 0)"},
      {R"({"count": 2, "time_window": 60, "policy": "redis"})",
       R"(then clause did not match (property "redis_host" is required))"},
      {R"({"count": 2, "time_window": 60, "policy": "redis", "redis_host": "h"})",
       R"(then clause did not match (property "redis_host" validation failed: string too short, expected at least 2, got 1))"},
      {R"({"count": 2, "time_window": 60, "policy": "redis", "redis_host": "127.0.0.1",
           "redis_port": 0})",
       R"(then clause did not match (property "redis_port" validation failed: expected 0 to be at least 1))"},
      {R"({"count": 2, "time_window": 60, "policy": "redis", "redis_host": "127.0.0.1",
           "redis_timeout": 0})",
       R"(then clause did not match (property "redis_timeout" validation failed: expected 0 to be at least 1))"},
      {R"({"count": 2, "time_window": 60, "policy": "redis-cluster"})",
       R"(else clause did not match (property "redis_cluster_nodes" is required))"},
      {R"({"count": 2, "time_window": 60, "policy": "redis-cluster",
           "redis_cluster_nodes": ["127.0.0.1:7000"]})",
       R"(else clause did not match (property "redis_cluster_name" is required))"},
      {R"({"count": 2, "time_window": 60, "policy": "redis-cluster", "redis_cluster_name": "c",
           "redis_cluster_nodes": []})",
       R"(else clause did not match (property "redis_cluster_nodes" validation failed: expect array to have at least 1 items))"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.conf);
    Json plugins = {{"limit-count", Json::parse(c.conf)}};
    Status s = check_plugins(plugins);
    if (c.error.empty()) {
      EXPECT_TRUE(s.is_ok()) << s.message();
    } else {
      EXPECT_EQ(s.message(), err + c.error);
    }
  }
}

TEST(CheckPlugins, PrometheusConf) {
  run_cases(
      {
          {R"({"prometheus": {}})", PluginUse::kHttp, nullptr},
          {R"({"prometheus": {"prefer_name": true}})", PluginUse::kHttp, nullptr},
          {R"({"prometheus": {"prefer_name": false}})", PluginUse::kConsumer, nullptr},
          {R"({"prometheus": {"prefer_name": "yes"}})", PluginUse::kHttp,
           "failed to check the configuration of plugin prometheus err: property \"prefer_name\" "
           "validation failed: wrong type: expected boolean, got string"},
          {R"({"prometheus": {"prefer_name": 1}})", PluginUse::kHttp,
           "failed to check the configuration of plugin prometheus err: property \"prefer_name\" "
           "validation failed: wrong type: expected boolean, got number"},
      },
      all_plugins());
}

// `_meta` on a built-in plugin: checked before the plugin's own conf, and hidden from it.
TEST(CheckPlugins, MetaOnBuiltInPlugins) {
  const std::string err = "failed to check the configuration of plugin limit-count err: ";
  const std::string filter_err =
      err + R"(property "_meta" validation failed: property "filter" validation failed: )";
  struct MetaCase {
    const char* meta;
    std::string error;  // exact; empty = valid
  };
  const MetaCase cases[] = {
      {R"({"disable": true})", ""},
      {R"({"disable": false, "priority": -5, "error_response": "go away"})", ""},
      {R"({"error_response": {"message": "go away"}})", ""},
      {R"({"filter": [["arg_a", "==", "1"]]})", ""},
      {R"({"filter": ["OR", ["http_x_a", "~~", "^a"], ["remote_addr", "ipmatch", "10.0.0.0/8"]]})",
       ""},
      {R"({"filter": []})", ""},
      {R"({"filter": "arg_a"})", filter_err + "wrong type: expected array, got string"},
      {R"({"filter": [["arg_a", "~~", "(unclosed"]]})",
       err +
           R"(failed to validate the 'vars' expression: invalid regex '(unclosed': missing closing parenthesis at offset 9 in ["arg_a","~~","(unclosed"])"},
      {R"({"filter": [["post_arg_a", "==", "1"]]})",
       err +
           R"(failed to validate the 'vars' expression: variable post_arg_a is not supported yet: matching on the request body is not implemented in ["post_arg_a","==","1"])"},
      {R"({"filter": [["arg_a", "like", "1"]]})",
       err +
           R"(failed to validate the 'vars' expression: invalid operator 'like' in ["arg_a","like","1"])"},
      {R"({"disable": "yes"})",
       err +
           R"(property "_meta" validation failed: property "disable" validation failed: wrong type: expected boolean, got string)"},
      {R"({"priority": "high"})",
       err +
           R"(property "_meta" validation failed: property "priority" validation failed: wrong type: expected integer, got string)"},
      {R"({"error_response": 5})",
       err +
           R"(property "_meta" validation failed: property "error_response" validation failed: value should match only one schema, but matches none)"},
      {R"({"error_response": ["x"]})",
       err +
           R"(property "_meta" validation failed: property "error_response" validation failed: value should match only one schema, but matches none)"},
      {R"({"pre_function": "x"})",
       err +
           R"(property "_meta" validation failed: additional properties forbidden, found pre_function)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.meta);
    Json conf = Json::parse(R"({"count": 1, "time_window": 1})");
    conf["_meta"] = Json::parse(c.meta);
    Status s = check_plugins(Json{{"limit-count", conf}});
    if (c.error.empty()) {
      EXPECT_TRUE(s.is_ok()) << s.message();
    } else {
      EXPECT_EQ(s.message(), c.error);
    }
  }
  // The `_meta` check comes first; a bad conf with a good `_meta` still names the conf.
  Status s = check_plugins(Json::parse(R"({"limit-count": {"_meta": {"disable": true}}})"));
  EXPECT_EQ(s.message(), err + R"(property "count" is required)");
}

TEST(CheckPlugins, RunsEachPluginsCheck) {
  constexpr const char* kErr = "failed to check the configuration of plugin fake-counted err: ";
  const std::string required = std::string(kErr) + R"(property "count" is required)";
  run_cases(
      {
          {R"({"fake-counted": {"count": 1}, "fake-stream": {}})", PluginUse::kHttp, nullptr},
          {R"({"fake-counted": {}})", PluginUse::kHttp, required.c_str()},
          {R"({"fake-counted": {"key": "k"}})", PluginUse::kConsumer, nullptr},
          {R"({"fake-counted": {"count": 1}})", PluginUse::kConsumer,
           "failed to check the configuration of plugin fake-counted err: property \"key\" is "
           "required"},
          {R"({"fake-counted": {"count": 1}, "other": {}})", PluginUse::kHttp,
           "unknown plugin [other]"},
          {R"({"fake-counted": 1})", PluginUse::kHttp,
           "invalid plugin conf 1 for plugin [fake-counted]"},
      },
      kFakes);
}

TEST(CheckPlugins, StreamRoutesTakeStreamPluginsOnly) {
  run_cases(
      {
          {R"({"fake-stream": {}})", PluginUse::kStream, nullptr},
          {R"({"fake-counted": {"count": 1}})", PluginUse::kStream,
           "unknown plugin [fake-counted]"},
      },
      kFakes);
}

TEST(CheckPlugins, MetaIsCheckedAndHiddenFromThePlugin) {
  constexpr const char* kErr = "failed to check the configuration of plugin fake-stream err: ";
  const std::string wrong_disable =
      std::string(kErr) +
      R"(property "_meta" validation failed: property "disable" validation failed: wrong type: expected boolean, got string)";
  const std::string unknown_key =
      std::string(kErr) +
      R"(property "_meta" validation failed: additional properties forbidden, found foo)";
  const std::string not_object =
      std::string(kErr) +
      R"(property "_meta" validation failed: wrong type: expected object, got number)";
  const std::string bad_response =
      std::string(kErr) +
      R"(property "_meta" validation failed: property "error_response" validation failed: value should match only one schema, but matches none)";
  const std::string bad_priority =
      std::string(kErr) +
      R"(property "_meta" validation failed: property "priority" validation failed: wrong type: expected integer, got number)";
  run_cases(
      {
          {R"({"fake-counted": {"count": 1, "_meta": {"disable": true}}})", PluginUse::kHttp,
           nullptr},
          {R"({"fake-stream": {"_meta": {"disable": false, "priority": 5, "error_response": "x",
               "filter": [["arg_a", "==", "1"]]}}})",
           PluginUse::kHttp, nullptr},
          {R"({"fake-stream": {"_meta": {"error_response": {"a": 1}}}})", PluginUse::kHttp,
           nullptr},
          {R"({"fake-stream": {"_meta": {"disable": "yes"}}})", PluginUse::kHttp,
           wrong_disable.c_str()},
          {R"({"fake-stream": {"_meta": {"foo": 1}}})", PluginUse::kHttp, unknown_key.c_str()},
          {R"({"fake-stream": {"_meta": 1}})", PluginUse::kHttp, not_object.c_str()},
          {R"({"fake-stream": {"_meta": {"error_response": 1}}})", PluginUse::kHttp,
           bad_response.c_str()},
          {R"({"fake-stream": {"_meta": {"priority": 1.5}}})", PluginUse::kHttp,
           bad_priority.c_str()},
      },
      kFakes);
}

TEST(CheckPluginMetadata, NeedsAKnownPluginAndAnObject) {
  EXPECT_TRUE(check_plugin_metadata("fake-counted", Json::parse(R"({"count": 1})"), kFakes));
  EXPECT_TRUE(check_plugin_metadata("fake-stream", Json::parse(R"({"any": 1})"), kFakes));
  EXPECT_EQ(check_plugin_metadata("nope", Json::object(), kFakes).message(),
            "unknown plugin [nope]");
  EXPECT_EQ(check_plugin_metadata("fake-counted", Json::object(), kFakes).message(),
            R"(invalid configuration: property "count" is required)");
  EXPECT_EQ(check_plugin_metadata("fake-stream", Json(1), kFakes).message(),
            "invalid configuration: wrong type: expected object, got number");
  EXPECT_EQ(check_plugin_metadata("kafka-logger", Json::object(), all_plugins()).message(),
            "unknown plugin [kafka-logger]");
  // The built-in plugins' metadata: any object (neither keeps metadata in Sluice).
  EXPECT_TRUE(check_plugin_metadata("prometheus", Json::object(), all_plugins()));
  EXPECT_TRUE(check_plugin_metadata("limit-count", Json::object(), all_plugins()));
  EXPECT_EQ(check_plugin_metadata("limit-count", Json::array(), all_plugins()).message(),
            "invalid configuration: wrong type: expected object, got table");
}

}  // namespace plugin_registry_test
}  // namespace sluice::config
