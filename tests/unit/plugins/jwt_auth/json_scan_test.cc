// The token JSON scanner against nlohmann::json::parse, the parser it replaces: for every text
// below, and for seeded mutations of them, it accepts exactly what nlohmann accepts as an
// object, and reads the same member values (last occurrence, unescaped, numbers as doubles).
// Both stop at a NUL after the object, as APISIX's cjson does (ch2token['\0'] = T_END).

#include "plugins/jwt_auth/json_scan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace sluice::plugins::jwt_auth {
namespace {

using Type = JsonValue::Type;

const std::vector<std::string>& texts() {
  static const std::vector<std::string> kTexts = {
      "{}",
      " {} ",
      "\t\r\n{ }\n",
      "{\"a\":1}",
      "{\"key\":\"user-key\",\"exp\":4102444800}",
      "\xEF\xBB\xBF{\"a\":1}",
      "\xEF\xBB{}",
      "\xEF{}",
      " \xEF\xBB\xBF{}",
      "{}\xEF\xBB\xBF",
      "",
      " ",
      "[]",
      "null",
      "1",
      "\"a\"",
      "{",
      "}",
      "{}}",
      "{} {}",
      "{}x",
      "{,}",
      "{\"a\"}",
      "{\"a\":}",
      "{\"a\" 1}",
      "{\"a\":1,}",
      "{\"a\":1 \"b\":2}",
      "{a:1}",
      "{'a':1}",
      "{\"a\":1}\n",
      "{\"a\":1}\x00",
      std::string("{\"a\":1}\0", 8),
      std::string("{} \0junk\xff", 10),
      std::string("{\0}", 3),
      std::string("\0{}", 3),
      std::string("{\"a\":\0}", 7),
      "{\"a\":tru}",
      "{\"a\":true}",
      "{\"a\":false}",
      "{\"a\":null}",
      "{\"a\":nul}",
      "{\"a\":True}",
      "{\"a\":-0}",
      "{\"a\":-0.0}",
      "{\"a\":0}",
      "{\"a\":01}",
      "{\"a\":1.}",
      "{\"a\":.5}",
      "{\"a\":+1}",
      "{\"a\":-}",
      "{\"a\":1e}",
      "{\"a\":1e+}",
      "{\"a\":1E+5}",
      "{\"a\":1e-5}",
      "{\"a\":1.5e3}",
      "{\"a\":-12.25}",
      "{\"a\":1e400}",
      "{\"a\":-1e400}",
      "{\"a\":1e-400}",
      "{\"a\":-1e-400}",
      "{\"a\":1e-310}",
      "{\"a\":1.7976931348623157e308}",
      "{\"a\":1.7976931348623159e308}",
      "{\"a\":0.00000000001e318}",
      "{\"a\":0.0001e-400}",
      "{\"a\":0e999999999999999999999}",
      "{\"a\":18446744073709551615}",
      "{\"a\":18446744073709551616}",
      "{\"a\":-9223372036854775809}",
      "{\"a\":9007199254740993}",
      "{\"a\":" + std::string(400, '9') + "}",
      "{\"a\":0." + std::string(400, '0') + "1e+5}",
      "{\"a\":1.0e+0001}",
      "{\"a\":0x10}",
      "{\"a\":Infinity}",
      "{\"a\":NaN}",
      "{\"a\":\"x\"}",
      "{\"a\":\"\\u0061\"}",
      "{\"\\u0061\":\"b\"}",
      "{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}",
      "{\"a\":\"\\x\"}",
      "{\"a\":\"\\'\"}",
      "{\"a\":\"\\u00\"}",
      "{\"a\":\"\\u00g0\"}",
      "{\"a\":\"\\uD83D\\uDE00\"}",
      "{\"a\":\"\\ud83d\\ude00\"}",
      "{\"a\":\"\\uD83D\"}",
      "{\"a\":\"\\uDE00\"}",
      "{\"a\":\"\\uD83D\\u0041\"}",
      "{\"a\":\"\\uD83Dx\"}",
      "{\"a\":\"\\u0000\"}",
      "{\"a\":\"\x01\"}",
      "{\"a\":\"\x1f\"}",
      "{\"a\":\"\x7f\"}",
      "{\"a\":\"\t\"}",
      "{\"a\":\"\xC3\xA9\"}",
      "{\"a\":\"\xC0\x80\"}",
      "{\"a\":\"\xC1\xBF\"}",
      "{\"a\":\"\xE0\x80\x80\"}",
      "{\"a\":\"\xE0\xA0\x80\"}",
      "{\"a\":\"\xED\xA0\x80\"}",
      "{\"a\":\"\xED\x9F\xBF\"}",
      "{\"a\":\"\xEF\xBF\xBF\"}",
      "{\"a\":\"\xF0\x8F\xBF\xBF\"}",
      "{\"a\":\"\xF0\x90\x80\x80\"}",
      "{\"a\":\"\xF4\x8F\xBF\xBF\"}",
      "{\"a\":\"\xF4\x90\x80\x80\"}",
      "{\"a\":\"\xF5\x80\x80\x80\"}",
      "{\"a\":\"\xFF\"}",
      "{\"a\":\"\x80\"}",
      "{\"a\":\"\xC3\"}",
      "{\"a\":\"\xE2\x82\"}",
      "{\"a\":\"abc}",
      "{\"a\":\"abc\\\"}",
      "{\"a\":1,\"a\":\"x\"}",
      "{\"a\":\"x\",\"a\":1}",
      "{\"a\":1,\"a\":false}",
      "{\"a\":[]}",
      "{\"a\":[1,2,[3,{}]]}",
      "{\"a\":{\"b\":{\"c\":[true,false,null,\"s\",-1.5e-3]}}}",
      "{\"a\":[1,]}",
      "{\"a\":[,1]}",
      "{\"a\":[1 2]}",
      "{\"a\":{\"b\"}}",
      "{\"a\":{\"b\":}}",
      "{\"a\":{,}}",
      "{\"a\":[}",
      "{\"a\":{]}",
      "{\"a\":[[[[]]]]}",
      "{\"a\":[[[[]]]}",
      "{\"a\":{\"b\":1,}}",
      "{\"a\":{\"b\":1}}}",
      "{\"a\":[\"\\uD800\"]}",
      "{\"a\":{\"\\uDC00\":1}}",
      "{\"a\":[\"\xC0\"]}",
      "{\"a\":[1e400]}",
      "{\"a\":{\"x\":01}}",
      "{\"b\":[{\"a\":1}],\"a\":2}",
      "{ \"a\" : 1 , \"b\" : [ 1 , { } ] }",
      "{\"a\":\"\"}",
      "{\"\":1}",
      "{\"a\":" + std::string(3000, '[') + std::string(3000, ']') + "}",
      "{\"a\":" + std::string(3000, '[') + std::string(2999, ']') + "}",
  };
  return kTexts;
}

// What nlohmann reads of member `name` of the object `j`, as a JsonValue.
JsonValue expected(const nlohmann::json& j, const std::string& name) {
  JsonValue v;
  auto it = j.find(name);
  if (it == j.end()) {
    return v;
  }
  switch (it->type()) {
    case nlohmann::json::value_t::null:
      v.type = Type::kNull;
      break;
    case nlohmann::json::value_t::boolean:
      v.type = it->get<bool>() ? Type::kTrue : Type::kFalse;
      break;
    case nlohmann::json::value_t::string:
      v.type = Type::kString;
      v.string = it->get<std::string>();
      break;
    case nlohmann::json::value_t::array:
      v.type = Type::kArray;
      break;
    case nlohmann::json::value_t::object:
      v.type = Type::kObject;
      break;
    default:
      v.type = Type::kNumber;
      v.number = it->get<double>();
      break;
  }
  return v;
}

// One text through both; the members "a", "b" and "" are compared.
void compare(const std::string& text) {
  JsonValue a, b, empty;
  a.type = b.type = empty.type = Type::kTrue;  // reset by the scan
  std::string scratch;
  const JsonWanted wanted[] = {{"a", &a}, {"b", &b}, {"", &empty}};
  const bool ok = scan_json_object(text, wanted, &scratch);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_EQ(ok, j.is_object()) << "text: " << testing::PrintToString(text.substr(0, 200));
  if (!ok) {
    return;
  }
  for (auto [name, got] : {std::pair{"a", &a}, std::pair{"b", &b}, std::pair{"", &empty}}) {
    JsonValue want = expected(j, name);
    ASSERT_EQ(got->type, want.type) << name << " in " << text.substr(0, 200);
    if (want.type == Type::kString) {
      EXPECT_EQ(got->string, want.string) << text.substr(0, 200);
    }
    if (want.type == Type::kNumber) {
      EXPECT_EQ(got->number, want.number) << text.substr(0, 200);
    }
  }
}

TEST(JwtJsonScan, AcceptsAndReadsWhatNlohmannDoes) {
  for (const std::string& t : texts()) {
    compare(t);
  }
}

// Each text with seeded random edits (a byte replaced, inserted or deleted, a piece repeated).
TEST(JwtJsonScan, MutationsAgreeWithNlohmann) {
  std::mt19937 rng(20261202);
  const std::string alphabet =
      "{}[]:,\"\\ .-+eE0123456789abnlrstuUDdfx\x01\x7f\x80\xBF\xC3\xED\xEF\xF4";
  for (const std::string& base : texts()) {
    if (base.size() > 200) {
      continue;
    }
    for (int i = 0; i < 300; ++i) {
      std::string t = base;
      for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
        const size_t at = t.empty() ? 0 : rng() % (t.size() + 1);
        const char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 4) {
          case 0:
            if (at < t.size())
              t[at] = c;
            break;
          case 1:
            t.insert(t.begin() + static_cast<ptrdiff_t>(at), c);
            break;
          case 2:
            if (at < t.size())
              t.erase(at, 1);
            break;
          default:
            t.insert(at, t.substr(at, rng() % 8));
            break;
        }
      }
      compare(t);
    }
  }
}

TEST(JwtJsonScan, AMemberWantedTwiceFillsBoth) {
  JsonValue key, exp;
  std::string scratch;
  const JsonWanted wanted[] = {{"exp", &key}, {"exp", &exp}};
  ASSERT_TRUE(scan_json_object(R"({"exp":"x","exp":12})", wanted, &scratch));
  EXPECT_EQ(key.type, Type::kNumber);
  EXPECT_EQ(exp.type, Type::kNumber);
  EXPECT_EQ(key.number, 12);
  EXPECT_EQ(exp.number, 12);
}

TEST(JwtJsonScan, RefusesNestingDeeperThanTheLimit) {
  JsonValue a;
  std::string scratch;
  const JsonWanted wanted[] = {{"a", &a}};
  const std::string deep =
      "{\"a\":" + std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']') + "}";
  EXPECT_TRUE(scan_json_object(deep, wanted, &scratch));
  const std::string deeper =
      "{\"a\":" + std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']') + "}";
  EXPECT_FALSE(scan_json_object(deeper, wanted, &scratch));
}

}  // namespace
}  // namespace sluice::plugins::jwt_auth
