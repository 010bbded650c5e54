#include "config/resources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sluice::config {
namespace resources_test {

using ::testing::StartsWith;

TEST(ValidId, FollowsApisixIdPattern) {
  EXPECT_TRUE(valid_id("1"));
  EXPECT_TRUE(valid_id("a-b_c.D9"));
  EXPECT_TRUE(valid_id(std::string(64, 'a')));
  EXPECT_FALSE(valid_id(""));
  EXPECT_FALSE(valid_id(std::string(65, 'a')));
  EXPECT_FALSE(valid_id("a b"));
  EXPECT_FALSE(valid_id("a/b"));
  EXPECT_FALSE(valid_id("é"));
}

struct Case {
  const char* json;
  const char* error;  // expected message prefix; nullptr = valid
};

TEST(DecodeService, Cases) {
  const Case cases[] = {
      {R"({})", nullptr},
      {R"({"id": "s1", "name": "svc", "desc": "d", "labels": {"a": "b"}, "plugins": {},
           "upstream": {"nodes": {"127.0.0.1:80": 1}}, "hosts": ["a.com", "*.b.com"],
           "enable_websocket": false, "create_time": 1, "update_time": 2})",
       nullptr},
      {R"({"upstream_id": 5})", nullptr},
      {R"({"uri": "/a"})", "invalid configuration: additional properties forbidden, found uri"},
      {R"({"script": "x"})", "invalid configuration: script is not supported"},
      {R"({"hosts": []})",
       R"(invalid configuration: property "hosts" validation failed: expect array to have at least 1 items)"},
      {R"({"hosts": ["a b"]})",
       R"(invalid configuration: property "hosts" validation failed: failed to validate item 1: failed to match pattern)"},
      {R"({"plugins": 1})",
       R"(invalid configuration: property "plugins" validation failed: wrong type: expected object, got number)"},
      {R"({"upstream": {"nodes": {}, "retries": "1"}})",
       R"(invalid configuration: property "upstream" validation failed: property "retries" validation failed: wrong type: expected integer, got string)"},
      {R"({"upstream_id": "a b"})",
       R"(invalid configuration: property "upstream_id" validation failed)"},
      {R"({"enable_websocket": 1})",
       R"(invalid configuration: property "enable_websocket" validation failed: wrong type: expected boolean, got number)"},
      {R"({"name": 1})", R"(invalid configuration: property "name" validation failed)"},
      {R"(null)", "invalid configuration: wrong type: expected object, got userdata"},
      {R"({"plugins": {"p": {}}})", "unknown plugin [p]"},
      {R"({"plugins": {"p": []}})", "invalid plugin conf [] for plugin [p]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    auto r = decode_service(Json::parse(c.json));
    if (c.error == nullptr) {
      EXPECT_TRUE(r.is_ok()) << r.status().message();
    } else {
      ASSERT_FALSE(r.is_ok());
      EXPECT_THAT(r.status().message(), StartsWith(c.error));
    }
  }
}

TEST(DecodeService, ReadsFields) {
  auto s = decode_service(Json::parse(
      R"({"id": 2, "hosts": ["a.com"], "plugins": {}, "upstream_id": "u",
          "enable_websocket": true})"));
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->id, "2");
  EXPECT_EQ(s->hosts, std::vector<std::string>{"a.com"});
  EXPECT_TRUE(s->plugins.is_object());
  EXPECT_EQ(s->upstream_id, "u");
  EXPECT_TRUE(s->enable_websocket);
  EXPECT_FALSE(s->upstream.has_value());
}

}  // namespace resources_test
}  // namespace sluice::config
