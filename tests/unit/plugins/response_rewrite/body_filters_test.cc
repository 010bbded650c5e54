// `filters` substitutions: ngx.re.sub / ngx.re.gsub semantics on a whole body, the option
// letters, the replacement template.

#include "plugins/response_rewrite/body_filters.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::plugins::response_rewrite {
namespace {

struct SubCase {
  const char* regex;
  const char* replace;
  const char* options;
  bool global;
  const char* body;
  const char* expect;
};

const SubCase kSubCases[] = {
    // APISIX t/plugin/response-rewrite2.t against "hello world\n"
    {"hello", "test", "jo", false, "hello world\n", "test world\n"},
    {"l", "t", "jo", true, "hello world\n", "hetto wortd\n"},
    {"l", "t", "jo", false, "hello world\n", "hetlo world\n"},
    {"hello", "", "jo", false, "hello world\n", " world\n"},
    {"\\w\\S+$", "*", "jo", false, "hello world\n", "hello *\n"},
    {"test", "TEST", "jo", false, "hello world\n", "hello world\n"},
    // captures
    {"(\\w+) (\\w+)", "$2 $1", "", false, "hello world", "world hello"},
    {"(\\w+) (\\w+)", "${2}-${1}-$0", "", false, "a b", "b-a-a b"},
    {"(a)", "$$1=$1", "", true, "aa", "$1=a$1=a"},
    {"(a)|(b)", "[$2]", "", true, "ab", "[][b]"},  // an unset group is empty
    {"a", "[$7]", "", true, "aa", "[][]"},         // so is a group the pattern has not
    // options
    {"HELLO", "x", "", false, "hello", "hello"},
    {"HELLO", "x", "i", false, "hello", "x"},
    {"^b", "x", "", true, "a\nb\nb", "a\nb\nb"},
    {"^b", "x", "m", true, "a\nb\nb", "a\nx\nx"},
    {"a.b", "x", "", false, "a\nb", "a\nb"},
    {"a.b", "x", "s", false, "a\nb", "x"},
    {"a b # comment", "x", "x", false, "ab", "x"},
    {"b", "x", "a", true, "bbab", "xxab"},  // anchored: each match where the last one ended
    {"(?<n>a)|(?<n>b)", "x", "D", true, "ab", "xx"},
    // empty matches step over one character (one UTF-8 character under "u")
    {"x*", "-", "", true, "abc", "-a-b-c-"},
    {"", "-", "", false, "abc", "-abc"},
    {"", "-", "u", true, "\xc3\xa9t\xc3\xa9", "-\xc3\xa9-t-\xc3\xa9-"},
    {".", "x", "u", true, "\xc3\xa9", "x"},
    {".", "x", "", true, "\xc3\xa9", "xx"},
    {"(?=b)", "-", "", false, "ab", "a-b"},
    {"b", "x", "jo", true, "", ""},
};

TEST(BodyFilter, Substitutions) {
  for (const SubCase& c : kSubCases) {
    auto f = BodyFilter::compile(c.regex, c.replace, c.options, c.global);
    ASSERT_TRUE(f.is_ok()) << c.regex << ": " << f.status().message();
    std::string out = "stale";
    EXPECT_TRUE(f->apply(c.body, &out)) << c.regex;
    EXPECT_EQ(out, c.expect) << c.regex << " on " << c.body;
  }
}

TEST(BodyFilter, InvalidUtf8UnderUFailsAndKeepsTheBody) {
  auto f = BodyFilter::compile("a", "b", "u", true);
  ASSERT_TRUE(f.is_ok());
  std::string out;
  EXPECT_FALSE(
      f->apply("a\xff"
               "a",
               &out));
  EXPECT_EQ(out,
            "a\xff"
            "a");
  // "U" checks too: ngx.re would skip the check and leave the result undefined.
  auto g = BodyFilter::compile("a", "b", "U", true);
  ASSERT_TRUE(g.is_ok());
  EXPECT_FALSE(
      g->apply("a\xff"
               "a",
               &out));
}

TEST(BodyFilter, CompileErrors) {
  struct Bad {
    const char* regex;
    const char* replace;
    const char* options;
    const char* error;
  };
  const Bad cases[] = {
      {"a", "b", "jz", R"(regex "a" validation failed: unknown flag "z" (flags "jz"))"},
      {"a", "b", "d",
       R"(regex "a" validation failed: flag "d" (DFA matching) is not supported by Sluice)"},
      {"a[", "b", "",
       R"(regex "a[" validation failed: missing terminating ] for character class at offset 2)"},
      {"a", "$", "", R"(replace "$" validation failed: a "$" must start $N, ${N} or $$)"},
      {"a", "${x}", "", R"(replace "${x}" validation failed: a "$" must start $N, ${N} or $$)"},
      {"a", "${12", "",
       R"(replace "${12" validation failed: the closing bracket of a ${N} is missing)"},
  };
  for (const Bad& b : cases) {
    auto f = BodyFilter::compile(b.regex, b.replace, b.options, false);
    ASSERT_FALSE(f.is_ok()) << b.regex << " " << b.replace;
    EXPECT_EQ(f.status().message(), b.error);
  }
}

}  // namespace
}  // namespace sluice::plugins::response_rewrite
