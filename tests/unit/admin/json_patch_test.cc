#include "admin/json_patch.h"

#include <gtest/gtest.h>

namespace sluice::admin {
namespace {

using config::Json;

TEST(JsonPatchTest, MergeIsRecursiveReplacesArraysAndDeletesNulls) {
  Json t = Json::parse(R"({"a":{"b":1,"c":2},"l":[1,2],"x":1,"keep":true})");
  merge_patch(t, Json::parse(R"({"a":{"c":3,"d":4},"l":[9],"x":null,"n":{"m":1}})"));
  EXPECT_EQ(t, Json::parse(R"({"a":{"b":1,"c":3,"d":4},"l":[9],"keep":true,"n":{"m":1}})"));
}

TEST(JsonPatchTest, SubPathReplacesTheValueThere) {
  Json t = Json::parse(R"({"upstream":{"nodes":{"a:1":1},"type":"roundrobin"}})");
  ASSERT_TRUE(patch_at(t, "upstream/nodes", Json::parse(R"({"b:2":3})")).is_ok());
  EXPECT_EQ(t["upstream"]["nodes"], Json::parse(R"({"b:2":3})"));
  ASSERT_TRUE(patch_at(t, "methods", Json::parse(R"(["GET"])")).is_ok());
  EXPECT_EQ(t["methods"], Json::parse(R"(["GET"])"));
  ASSERT_TRUE(patch_at(t, "methods", Json()).is_ok());
  EXPECT_FALSE(t.contains("methods"));
}

TEST(JsonPatchTest, SubPathCreatesMissingParents) {
  Json t = Json::parse(R"({"uri":"/a"})");
  ASSERT_TRUE(patch_at(t, "labels/env", Json("prod")).is_ok());
  EXPECT_EQ(t, Json::parse(R"({"uri":"/a","labels":{"env":"prod"}})"));
}

TEST(JsonPatchTest, SubPathErrors) {
  Json t = Json::parse(R"({"uri":"/a","upstream":{"nodes":{}}})");
  Json before = t;
  struct Case {
    const char* path;
    const char* error;
  } cases[] = {
      {"uri/x", "invalid sub path [uri/x]: [x] is not an object"},
      {"upstream//x", "invalid sub path [upstream//x]"},
      {"", "invalid sub path []"},
  };
  for (const auto& c : cases) {
    auto st = patch_at(t, c.path, Json(1));
    ASSERT_FALSE(st.is_ok()) << c.path;
    EXPECT_EQ(st.message(), c.error);
    EXPECT_EQ(t, before);
  }
}

TEST(JsonPatchTest, NestingLimitIgnoresBracketsInStrings) {
  EXPECT_TRUE(nesting_within(R"({"a":[[1]]})", 3));
  EXPECT_FALSE(nesting_within(R"({"a":[[1]]})", 2));
  EXPECT_TRUE(nesting_within(R"({"a":"[[[[[[\"[[["})", 1));
  EXPECT_FALSE(nesting_within(std::string(100000, '['), 64));
}

// lua-cjson takes raw control characters inside strings; only those are rewritten.
TEST(JsonPatchTest, RawControlsInsideStringsAreEscaped) {
  struct Case {
    std::string in;
    std::optional<std::string> out;
  } cases[] = {
      {"{\"a\":\"x\ny\ty\"}", "{\"a\":\"x\\u000ay\\u0009y\"}"},
      {"{\"a\":\"\\\"\n\"}", "{\"a\":\"\\\"\\u000a\"}"},  // after an escaped quote
      {"{\n\t\"a\": \"b\"\r\n}", std::nullopt},           // whitespace outside strings
      {"{\"a\":\"\x01\x1f\"}", "{\"a\":\"\\u0001\\u001f\"}"},
      {std::string("{\"a\":\"\0\"}", 8), std::nullopt},  // a NUL stays, and is refused
      {"{\"a\":\"plain\"}", std::nullopt},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(escape_raw_controls(c.in), c.out) << c.in;
  }
  auto fixed = escape_raw_controls("{\"desc\":\"line 1\nline 2\"}");
  ASSERT_TRUE(fixed);
  EXPECT_EQ(Json::parse(*fixed)["desc"], "line 1\nline 2");
}

}  // namespace
}  // namespace sluice::admin
