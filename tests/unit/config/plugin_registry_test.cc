#include "config/plugin_registry.h"

#include <gtest/gtest.h>

namespace sluice::config {
namespace {

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
    {"fake-counted", 1002, false, check_counted},
    {"fake-stream", 500, true, nullptr},
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

TEST(PluginRegistry, IsEmptyUntilPluginsLand) {
  EXPECT_TRUE(all_plugins().empty());
  EXPECT_EQ(find_plugin("limit-count"), nullptr);
  EXPECT_EQ(find_plugin("fake-stream", kFakes), &kFakes[1]);
  EXPECT_EQ(find_plugin("fake", kFakes), nullptr);
}

TEST(CheckPlugins, WithTheBuiltInRegistry) {
  const Case cases[] = {
      {"{}", PluginUse::kHttp, nullptr},
      {R"({"limit-count": {"count": 2}})", PluginUse::kHttp, "unknown plugin [limit-count]"},
      {R"({"prometheus": {}})", PluginUse::kConsumer, "unknown plugin [prometheus]"},
      {R"({"a": {"_meta": {"disable": true}}})", PluginUse::kHttp, "unknown plugin [a]"},
      {R"({"a": "x"})", PluginUse::kHttp, R"(invalid plugin conf "x" for plugin [a])"},
      {R"({"a": null})", PluginUse::kHttp, "invalid plugin conf null for plugin [a]"},
      {"[]", PluginUse::kHttp,
       R"(invalid configuration: property "plugins" validation failed: wrong type: expected object, got array)"},
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
  EXPECT_EQ(check_plugin_metadata("http-logger", Json::object(), all_plugins()).message(),
            "unknown plugin [http-logger]");
}

}  // namespace
}  // namespace sluice::config
