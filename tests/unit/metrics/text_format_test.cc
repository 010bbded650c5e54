#include "metrics/text_format.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace sluice::metrics {
namespace {

TEST(TextFormatTest, DoublesPrintShortestWithoutExponent) {
  const std::vector<std::pair<double, const char*>> cases = {
      {0, "0"},
      {1, "1"},
      {0.1, "0.1"},
      {1.5, "1.5"},
      {60000, "60000"},
      {1e6, "1000000"},
      {1e21, "1000000000000000000000"},
      {123456.789, "123456.789"},
      {0.000001, "0.000001"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::numeric_limits<double>::quiet_NaN(), "NaN"},
  };
  for (const auto& [x, want] : cases) {
    std::string out;
    append_double(out, x);
    EXPECT_EQ(out, want);
  }
  std::string tiny;
  append_double(tiny, std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(tiny.substr(0, 4), "0.00");
  EXPECT_EQ(tiny.back(), '5');
}

TEST(TextFormatTest, LabelEscapesOnlyWhatTheFormatRequires) {
  std::string out;
  append_label(out, "k", "a\\b\"c\nd\te");
  EXPECT_EQ(out, "k=\"a\\\\b\\\"c\\nd\te\"");
}

TEST(TextFormatTest, LabelKeepsUtf8AndReplacesMalformedBytes) {
  const std::string kBad = "\xEF\xBF\xBD";  // U+FFFD
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"caf\xC3\xA9", "caf\xC3\xA9"},                                    // 2-byte sequence kept
      {"\xE2\x82\xAC\xF0\x9F\x98\x80", "\xE2\x82\xAC\xF0\x9F\x98\x80"},  // 3 and 4 bytes
      {std::string("a\xFF") + "b", "a" + kBad + "b"},                    // never valid
      {"\xC3", kBad},                                                    // cut short at the end
      {"\xC0\xAF", kBad + kBad},                                         // overlong '/'
      {"\xED\xA0\x80", kBad + kBad + kBad},                              // a surrogate
      {"\xF4\x90\x80\x80", kBad + kBad + kBad + kBad},                   // past U+10FFFF
      {"\xE2\x82\"", kBad + kBad + "\\\""},                              // cut short by a quote
  };
  for (const auto& [raw, printed] : cases) {
    std::string out;
    append_label(out, "k", raw);
    EXPECT_EQ(out, "k=\"" + printed + "\"");
  }
}

}  // namespace
}  // namespace sluice::metrics
