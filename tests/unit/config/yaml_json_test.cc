#include "config/yaml_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sluice::config {
namespace yaml_json_test {

// The JSON type, with signed and unsigned integers alike.
std::string kind(const Json& j) { return j.is_number_integer() ? "integer" : j.type_name(); }

struct TypingCase {
  const char* yaml;
  const char* json;  // expected `v` as JSON text
};

TEST(YamlJson, TypesPlainScalarsAndKeepsQuotedOnesAsStrings) {
  const TypingCase cases[] = {
      {"v: true", "true"},
      {"v: False", "false"},
      {"v: TRUE", "true"},
      {"v: null", "null"},
      {"v: ~", "null"},
      {"v:", "null"},
      {"v: 1980", "1980"},
      {"v: -7", "-7"},
      {"v: 0x1F", "31"},
      {"v: 0o17", "15"},
      {"v: 1.5", "1.5"},
      {"v: 1e3", "1000.0"},
      {"v: 18446744073709551615", "18446744073709551615"},
      {"v: \"1980\"", "\"1980\""},
      {"v: '1980'", "\"1980\""},
      {"v: \"true\"", "\"true\""},
      {"v: 'null'", "\"null\""},
      {"v: !!str 12", "\"12\""},
      {"v: !!int \"12\"", "12"},
      {"v: yes", "\"yes\""},
      {"v: 1.2.3", "\"1.2.3\""},
      {"v: .inf", "\".inf\""},
      {"v: 127.0.0.1:1980", "\"127.0.0.1:1980\""},
      {"v: |\n  12\n", "\"12\\n\""},
      {"v: [1, \"2\", x]", "[1, \"2\", \"x\"]"},
      {"v: {a: 1}", "{\"a\": 1}"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto r = yaml_to_json(c.yaml, "t.yaml");
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r->at("v"), Json::parse(c.json));
    EXPECT_EQ(kind(r->at("v")), kind(Json::parse(c.json)));
  }
}

TEST(YamlJson, IntegersAreIntegerTyped) {
  auto r = yaml_to_json("a: 1980\nb: 1.0\n", "t.yaml");
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->at("a").is_number_integer());
  EXPECT_TRUE(r->at("b").is_number_float());
}

TEST(YamlJson, EmptyTextIsNull) {
  auto r = yaml_to_json("", "t.yaml");
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->is_null());
  r = yaml_to_json("# only a comment\n", "t.yaml");
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->is_null());
}

TEST(YamlJson, NonStringKeysBecomeStrings) {
  auto r = yaml_to_json("1: a\ntrue: b\n", "t.yaml");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->at("1"), "a");
  EXPECT_EQ(r->at("true"), "b");
}

struct ErrorCase {
  const char* yaml;
  const char* error_prefix;
};

TEST(YamlJson, ErrorsNameFileLineAndColumn) {
  const ErrorCase cases[] = {
      {"a: 1\nb: [1, 2\n", "apisix.yaml: line 3, column 1: "},
      {"a:\n  b: 1\n c: 2\n", "apisix.yaml: line 3, column "},
      {"a: b: c\n", "apisix.yaml: line 1, column 5: "},
      {"a: 1\na: 2\n", "apisix.yaml: line 2, column 1: duplicate key \"a\""},
      {"? [1, 2]\n: x\n", "apisix.yaml: line 1, column 3: a mapping key must be a scalar"},
      {"a: *nothing\n", "apisix.yaml: line 1, column 4: "},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto r = yaml_to_json(c.yaml, "apisix.yaml");
    ASSERT_FALSE(r.is_ok());
    EXPECT_THAT(r.status().message(), ::testing::StartsWith(c.error_prefix));
  }
}

TEST(YamlJson, RefusesAliasBombs) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) {
      text += (j ? ", *a" : "*a") + std::to_string(i - 1);
    }
    text += "]\n";
  }
  auto r = yaml_to_json(text, "bomb.yaml");
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("too many values"));
}

TEST(YamlJson, RefusesDeepNesting) {
  std::string text = std::string(200, '[') + std::string(200, ']');
  auto r = yaml_to_json(text, "deep.yaml");
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("nesting deeper than 128"));
}

}  // namespace yaml_json_test
}  // namespace sluice::config
