// The loggers' JSON writer against nlohmann::json, which wrote the entries before: the same
// bytes for every string (invalid UTF-8 included), the same objects for headers and arguments.

#include "plugins/loggers/json_out.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "plugin/args.h"
#include "plugin/info.h"

namespace sluice::plugins::loggers {
namespace {

using plugin::Json;

std::string nlohmann_string(std::string_view s) {
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string ours(std::string_view s) {
  std::string out;
  append_json_string(&out, s);
  return out;
}

TEST(LoggerJsonOut, StringsAsNlohmannWritesThem) {
  const std::string cases[] = {
      "",
      "plain text",
      "quote \" backslash \\ slash /",
      std::string("nul \0 bell \a tab \t nl \n cr \r bs \b ff \f esc \x1b del \x7f", 48),
      "utf-8: \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
      "lone continuation \x80 end",
      "lead without tail \xc3",
      "cut three \xe2\x82",
      "broken by ascii \xe2\x82x",
      "overlong \xc0\xaf and \xe0\x80\xaf",
      "surrogate \xed\xa0\x80",
      "past U+10FFFF \xf4\x90\x80\x80 and \xf5\x80",
      "\xff\xfe\xfd",
      "four cut \xf0\x9f\x98",
      "\xe2\x82\xe2\x82\xac",
  };
  for (const std::string& c : cases) {
    EXPECT_EQ(ours(c), nlohmann_string(c)) << "input: " << Json::binary({c.begin(), c.end()});
  }
}

TEST(LoggerJsonOut, RandomBytesAsNlohmannWritesThem) {
  std::mt19937 rng(20261202);
  // Bytes weighted towards the interesting ones: UTF-8 leads, continuations, escapes.
  const unsigned char pool[] = {'a',  'z',  '"',  '\\', 0,    0x1f, 0x7f, 0x80, 0x9f, 0xa0, 0xbf,
                                0xc0, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff};
  for (int round = 0; round < 20000; ++round) {
    std::string s(rng() % 12, '\0');
    for (char& c : s) {
      c = static_cast<char>(rng() % 3 == 0 ? rng() % 256 : pool[rng() % sizeof(pool)]);
    }
    ASSERT_EQ(ours(s), nlohmann_string(s)) << "input: " << Json::binary({s.begin(), s.end()});
  }
}

TEST(LoggerJsonOut, MillisecondsReadBackAsTheDouble) {
  for (uint64_t ns : {uint64_t{0}, uint64_t{1}, uint64_t{999}, uint64_t{1000}, uint64_t{123456},
                      uint64_t{1000000}, uint64_t{1500000}, uint64_t{2000001}, uint64_t{987654321},
                      uint64_t{3600000000000}}) {
    std::string out;
    append_ms(&out, ns);
    EXPECT_EQ(std::stod(out), static_cast<double>(ns) / 1e6) << out;
    EXPECT_EQ(Json::parse(out).get<double>(), static_cast<double>(ns) / 1e6) << out;
  }
  std::string out;
  append_ms(&out, 1500000);
  EXPECT_EQ(out, "1.5");
  out.clear();
  append_ms(&out, 2000000);
  EXPECT_EQ(out, "2");
  out.clear();
  append_ms(&out, 120);
  EXPECT_EQ(out, "0.00012");
}

TEST(LoggerJsonOut, HeadersAsNgxReqTables) {
  const std::pair<std::string, std::string> headers[] = {
      {"Host", "a.example"}, {"X-B", "1"}, {"Accept", "*/*"}, {"x-b", "2"},
      {"X-A", "\"q\""},      {"X-B", "3"}, {"Cookie", "k=v"}, {"Z-\xc3\xa9", "\xff"},
  };
  PairObject p;
  p.clear();
  Json expect = Json::object();
  for (const auto& [name, value] : headers) {
    p.add(name, value, true);
    std::string lower = name;
    for (char& c : lower) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    plugin::add_value(expect, lower, Json(value));
  }
  std::string out;
  p.render(&out);
  EXPECT_EQ(out, expect.dump(-1, ' ', false, Json::error_handler_t::replace));
  EXPECT_EQ(Json::parse(out)["x-b"], Json::array({"1", "2", "3"}));
}

TEST(LoggerJsonOut, ArgumentsAsDecodeArgs) {
  for (std::string_view q : {"", "a=1", "a=1&b&a=2&a=3", "x=%41%2b+y&&=skip&flag&flag=v",
                             "k%3D=v%26&%zz=%4", "b&a=&c=%E2%82%AC", "dup&dup&dup"}) {
    PairObject p;
    p.clear();
    plugin::each_arg(q, [&](std::string_view k, std::string_view v, bool has_value) {
      p.add_arg(k, v, has_value);
    });
    std::string out;
    p.render(&out);
    EXPECT_EQ(out, plugin::decode_args(q).dump(-1, ' ', false, Json::error_handler_t::replace))
        << q;
  }
}

TEST(LoggerJsonOut, ReusedTableStartsEmpty) {
  PairObject p;
  p.add("a", "1", false);
  p.clear();
  p.add("b", "2", false);
  std::string out;
  p.render(&out);
  EXPECT_EQ(out, R"({"b":"2"})");
}

}  // namespace
}  // namespace sluice::plugins::loggers
