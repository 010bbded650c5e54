#include "config/env_subst.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

namespace sluice::config {
namespace env_subst_test {

using Json = nlohmann::json;

class EnvSubst : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("SLUICE_T_HOST", "10.0.0.1", 1);
    setenv("SLUICE_T_PORT", "1980", 1);
    setenv("SLUICE_T_EMPTY", "", 1);
    setenv("SLUICE_T_FLAG", "true", 1);
    unsetenv("SLUICE_T_UNSET");
  }
};

struct Case {
  const char* in;
  const char* out;
};

TEST_F(EnvSubst, ReplacesReferences) {
  const Case cases[] = {
      {"${{SLUICE_T_HOST}}", "10.0.0.1"},
      {"${{ SLUICE_T_HOST }}", "10.0.0.1"},
      {"${{SLUICE_T_HOST}}:${{SLUICE_T_PORT}}", "10.0.0.1:1980"},
      {"x ${{SLUICE_T_UNSET:=8080}} y", "x 8080 y"},
      {"${{ SLUICE_T_UNSET := a b }}", "a b"},
      {"${{SLUICE_T_UNSET:=}}", ""},
      {"${{SLUICE_T_PORT:=1}}", "1980"},
      {"${{SLUICE_T_EMPTY}}", ""},
      {"no references", "no references"},
      {"${{not a name}}", "${{not a name}}"},
      {"${{SLUICE_T_HOST", "${{SLUICE_T_HOST"},
      {"${SLUICE_T_HOST}", "${SLUICE_T_HOST}"},
      {"${{${{SLUICE_T_PORT}}", "${{1980"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.in);
    auto r = substitute_env(c.in);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(*r, c.out);
  }
}

TEST_F(EnvSubst, UnsetWithoutDefaultNamesTheVariable) {
  for (const char* in : {"${{SLUICE_T_UNSET}}", "a: ${{ SLUICE_T_UNSET }}\n"}) {
    auto r = substitute_env(in);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), "can't find environment variable SLUICE_T_UNSET");
  }
}

TEST_F(EnvSubst, DocumentValuesAreRetypedLikeApisix) {
  Json doc = Json::parse(R"({
    "port": "${{SLUICE_T_PORT}}", "flag": "${{SLUICE_T_FLAG}}",
    "addr": "${{SLUICE_T_HOST}}:${{SLUICE_T_PORT}}", "plain": "1980",
    "list": ["${{SLUICE_T_UNSET:=2.5}}"], "${{SLUICE_T_HOST}}": 1
  })");
  ASSERT_TRUE(substitute_env_in_document(&doc).is_ok());
  EXPECT_EQ(doc["port"], Json(1980));
  EXPECT_EQ(doc["flag"], Json(true));
  EXPECT_EQ(doc["addr"], Json("10.0.0.1:1980"));
  EXPECT_EQ(doc["plain"], Json("1980"));  // no variable used: the text stays as written
  EXPECT_EQ(doc["list"][0], Json(2.5));
  EXPECT_EQ(doc["10.0.0.1"], Json(1));
}

TEST_F(EnvSubst, DocumentErrorNamesTheVariable) {
  Json doc = Json::parse(R"({"a": {"b": ["${{SLUICE_T_UNSET}}"]}})");
  auto s = substitute_env_in_document(&doc);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "can't find environment variable SLUICE_T_UNSET");
}

}  // namespace env_subst_test
}  // namespace sluice::config
