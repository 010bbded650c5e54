#include "redis/resp.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "redis/script.h"

namespace sluice::redis {
namespace {

// What a parser made of an input: the replies (as describe() prints them) and, on a syntax
// error, the reason and the offset just past the byte at fault.
struct Parsed {
  std::vector<std::string> replies;
  std::string error;
  size_t error_end = 0;
  bool complete = true;  // false when the input ended inside a reply

  friend bool operator==(const Parsed&, const Parsed&) = default;
};

Parsed parse_pieces(std::string_view in, const std::vector<size_t>& cuts, ParserLimits limits) {
  Parser p(limits);
  Parsed out;
  size_t begin = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t end = i < cuts.size() ? cuts[i] : in.size();
    const std::string piece(in.substr(begin, end - begin));  // its own copy: ASan sees overreads
    std::string_view rest = piece;
    size_t offset = begin;
    begin = end;
    out.complete = true;
    while (!rest.empty()) {
      const Parser::Step s = p.feed(rest);
      EXPECT_LE(s.consumed, rest.size());
      offset += s.consumed;
      rest.remove_prefix(s.consumed);
      if (s.status == Parser::Status::kReply) {
        out.replies.push_back(describe(p.reply()));
      } else if (s.status == Parser::Status::kError) {
        out.error = p.error();
        out.error_end = offset;
        EXPECT_EQ(p.feed("+OK\r\n").status, Parser::Status::kError) << "errors are sticky";
        EXPECT_EQ(p.feed("+OK\r\n").consumed, 0u);
        return out;
      } else {
        EXPECT_TRUE(rest.empty()) << "kNeedMore consumes everything";
        out.complete = false;
      }
    }
  }
  return out;
}

// The same input whole, byte by byte and at 20 random sets of cut points must parse the same.
Parsed parse_every_way(std::string_view in, ParserLimits limits = {}) {
  const Parsed whole = parse_pieces(in, {}, limits);
  std::vector<size_t> bytes;
  for (size_t i = 1; i < in.size(); ++i) {
    bytes.push_back(i);
  }
  EXPECT_EQ(parse_pieces(in, bytes, limits), whole) << "byte by byte";
  std::mt19937 rng(static_cast<uint32_t>(in.size()));
  for (int round = 0; round < 20 && in.size() > 1; ++round) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i < in.size(); ++i) {
      if (rng() % 4 == 0) {
        cuts.push_back(i);
      }
    }
    EXPECT_EQ(parse_pieces(in, cuts, limits), whole) << "random cuts, round " << round;
  }
  return whole;
}

struct ValidCase {
  std::string_view name;
  std::string input;
  std::vector<std::string> replies;
};

TEST(RespParserTest, ValidRepliesParseTheSameHoweverSplit) {
  const std::vector<ValidCase> cases = {
      {"simple", "+OK\r\n", {"OK"}},
      {"empty simple", "+\r\n", {""}},
      {"error", "-ERR unknown command 'foo'\r\n", {"(error) ERR unknown command 'foo'"}},
      {"zero", ":0\r\n", {"(integer) 0"}},
      {"negative", ":-1\r\n", {"(integer) -1"}},
      {"minus zero", ":-0\r\n", {"(integer) 0"}},
      {"leading zeros", ":007\r\n", {"(integer) 7"}},
      {"int64 max", ":9223372036854775807\r\n", {"(integer) 9223372036854775807"}},
      {"int64 min", ":-9223372036854775808\r\n", {"(integer) -9223372036854775808"}},
      {"bulk", "$3\r\nfoo\r\n", {"\"foo\""}},
      {"empty bulk", "$0\r\n\r\n", {"\"\""}},
      {"bulk with CRLF inside", "$4\r\na\r\nb\r\n", {"\"a\\x0d\\x0ab\""}},
      {"nil bulk", "$-1\r\n", {"(nil)"}},
      {"empty array", "*0\r\n", {"[]"}},
      {"nil array", "*-1\r\n", {"(nil array)"}},
      {"mixed array", "*3\r\n:1\r\n$1\r\na\r\n$-1\r\n", {"[(integer) 1, \"a\", (nil)]"}},
      {"nested", "*2\r\n*2\r\n:1\r\n:2\r\n*1\r\n+x\r\n", {"[[(integer) 1, (integer) 2], [x]]"}},
      {"empty and nil inside", "*2\r\n*0\r\n*-1\r\n", {"[[], (nil array)]"}},
      {"error inside array", "*1\r\n-NOSCRIPT x\r\n", {"[(error) NOSCRIPT x]"}},
      {"pipelined", "+OK\r\n:5\r\n$1\r\nz\r\n", {"OK", "(integer) 5", "\"z\""}},
      {"cluster slots",
       "*1\r\n*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$3\r\nabc\r\n",
       {"[[(integer) 0, (integer) 5460, [\"127.0.0.1\", (integer) 7000, \"abc\"]]]"}},
  };
  for (const ValidCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Parsed p = parse_every_way(c.input);
    EXPECT_EQ(p.error, "");
    EXPECT_TRUE(p.complete);
    EXPECT_EQ(p.replies, c.replies);
  }
}

TEST(RespParserTest, EveryPrefixOfAReplyNeedsMore) {
  const std::string in = "*2\r\n$5\r\nhello\r\n*1\r\n:-12\r\n";
  for (size_t n = 0; n < in.size(); ++n) {
    Parser p;
    const Parser::Step s = p.feed(std::string_view(in).substr(0, n));
    EXPECT_EQ(s.status, Parser::Status::kNeedMore) << n;
    EXPECT_EQ(s.consumed, n);
    const Parser::Step rest = p.feed(std::string_view(in).substr(n));
    EXPECT_EQ(rest.status, Parser::Status::kReply) << n;
    EXPECT_EQ(rest.consumed, in.size() - n);
    EXPECT_EQ(describe(p.reply()), "[\"hello\", [(integer) -12]]");
  }
}

struct ErrorCase {
  std::string_view name;
  std::string input;
  std::string error;
  size_t error_end;
  ParserLimits limits = {};
};

ParserLimits with(size_t ParserLimits::*field, size_t value) {
  ParserLimits l;
  l.*field = value;
  return l;
}

TEST(RespParserTest, MalformedRepliesSayWhy) {
  const std::vector<ErrorCase> cases = {
      {"unknown type", "?x\r\n", "unknown reply type byte 0x3f", 1},
      {"RESP3 null", "_\r\n", "unknown reply type byte 0x5f", 1},
      {"type inside array", "*2\r\n:1\r\n!", "unknown reply type byte 0x21", 9},
      {"bare LF", "+OK\n", "line not terminated by CRLF", 4},
      {"CR inside", "+O\rK\r\n", "CR inside a line", 6},
      {"CR CR LF", "-ERR\r\r\n", "CR inside a line", 7},
      {"integer with letters", ":12a\r\n", "invalid integer", 6},
      {"empty integer", ":\r\n", "invalid integer", 3},
      {"plus sign", ":+5\r\n", "invalid integer", 5},
      {"lone minus", ":-\r\n", "invalid integer", 4},
      {"integer overflow", ":9223372036854775808\r\n", "invalid integer", 22},
      {"bulk length -2", "$-2\r\n", "invalid bulk string length", 5},
      {"bulk length text", "$abc\r\n", "invalid bulk string length", 6},
      {"bulk length empty", "$\r\n", "invalid bulk string length", 3},
      {"bulk missing CR", "$3\r\nabcX", "bulk string not terminated by CRLF", 8},
      {"bulk missing LF", "$3\r\nabc\rX", "bulk string not terminated by CRLF", 9},
      {"bulk longer than said", "$1\r\nab\r\n", "bulk string not terminated by CRLF", 6},
      {"array length -2", "*-2\r\n", "invalid array length", 5},
      {"array length text", "*x\r\n", "invalid array length", 4},
      {"bulk over limit", "$17\r\n", "bulk string of 17 bytes exceeds the limit of 16", 5,
       with(&ParserLimits::max_bulk_length, 16)},
      {"huge bulk", "$9223372036854775807\r\n",
       "bulk string of 9223372036854775807 bytes exceeds the limit of 16777216", 22},
      {"array over limit", "*5\r\n", "array of 5 elements exceeds the limit of 4", 4,
       with(&ParserLimits::max_array_length, 4)},
      {"huge array", "*9223372036854775807\r\n",
       "array of 9223372036854775807 elements exceeds the limit of 1048576", 22},
      {"too deep", "*1\r\n*1\r\n*1\r\n:1\r\n", "arrays nested deeper than 2", 12,
       with(&ParserLimits::max_depth, 2)},
      {"line too long", "+abcde\r\n", "line longer than 4 bytes", 7,
       with(&ParserLimits::max_line_length, 4)},
      {"length line too long", "$000000001\r\n", "line longer than 4 bytes", 7,
       with(&ParserLimits::max_line_length, 4)},
      {"too many elements", "*3\r\n:1\r\n:2\r\n:3\r\n", "reply holds more than 3 elements", 16,
       with(&ParserLimits::max_total_elements, 3)},
      {"error after a good reply", "+OK\r\n+\n", "line not terminated by CRLF", 7},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Parsed p = parse_every_way(c.input, c.limits);
    EXPECT_EQ(p.error, c.error);
    EXPECT_EQ(p.error_end, c.error_end);
  }
}

TEST(RespParserTest, LimitsAreInclusive) {
  struct Case {
    std::string input;
    ParserLimits limits;
  };
  const std::vector<Case> cases = {
      {"$4\r\nabcd\r\n", with(&ParserLimits::max_bulk_length, 4)},
      {"*2\r\n:1\r\n:2\r\n", with(&ParserLimits::max_array_length, 2)},
      {"*1\r\n*1\r\n:1\r\n", with(&ParserLimits::max_depth, 2)},
      {"+abcd\r\n", with(&ParserLimits::max_line_length, 4)},
      {"*2\r\n:1\r\n:2\r\n", with(&ParserLimits::max_total_elements, 3)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    const Parsed p = parse_every_way(c.input, c.limits);
    EXPECT_EQ(p.error, "");
    EXPECT_EQ(p.replies.size(), 1u);
  }
}

TEST(RespParserTest, ReplyFieldsAndReset) {
  Parser p;
  const std::string in = "*3\r\n:42\r\n$2\r\nhi\r\n-ERR no\r\n";
  ASSERT_EQ(p.feed(in).status, Parser::Status::kReply);
  const Reply& r = p.reply();
  ASSERT_EQ(r.type, Reply::Type::kArray);
  ASSERT_EQ(r.elements.size(), 3u);
  EXPECT_EQ(r.elements[0].type, Reply::Type::kInteger);
  EXPECT_EQ(r.elements[0].integer, 42);
  EXPECT_TRUE(r.elements[1].is_string());
  EXPECT_EQ(r.elements[1].str, "hi");
  EXPECT_TRUE(r.elements[2].is_error());
  EXPECT_EQ(r.elements[2].str, "ERR no");
  Reply taken = p.take_reply();
  EXPECT_EQ(taken.elements.size(), 3u);

  ASSERT_EQ(p.feed("~").status, Parser::Status::kError);
  p.reset();
  EXPECT_EQ(p.error(), "");
  const Parser::Step s = p.feed("$-1\r\n");
  EXPECT_EQ(s.status, Parser::Status::kReply);
  EXPECT_TRUE(p.reply().is_nil());
}

TEST(RespParserTest, LargeBulkStringInRandomPieces) {
  std::string value(1 << 20, 'x');
  for (size_t i = 0; i < value.size(); i += 997) {
    value[i] = static_cast<char>(i % 251);
  }
  const std::string in = "$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
  std::mt19937 rng(7);
  Parser p;
  size_t pos = 0;
  Parser::Step s{Parser::Status::kNeedMore, 0};
  while (pos < in.size()) {
    const size_t n = std::min<size_t>(in.size() - pos, 1 + rng() % 70000);
    s = p.feed(std::string_view(in).substr(pos, n));
    pos += s.consumed;
    ASSERT_NE(s.status, Parser::Status::kError) << p.error();
  }
  ASSERT_EQ(s.status, Parser::Status::kReply);
  EXPECT_EQ(p.reply().str, value);
}

TEST(RespEncoderTest, CommandsAreArraysOfBulkStrings) {
  std::string out;
  const std::string_view set[] = {"SET", "k", "v"};
  append_command(&out, set);
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
  out.clear();
  const std::string binary("a\0\r\nb", 5);
  const std::string_view odd[] = {"", binary};
  append_command(&out, odd);
  EXPECT_EQ(out, std::string("*2\r\n$0\r\n\r\n$5\r\na\0\r\nb\r\n", 21));

  Parser p;  // what the encoder writes, the parser reads back
  ASSERT_EQ(p.feed(out).status, Parser::Status::kReply);
  ASSERT_EQ(p.reply().elements.size(), 2u);
  EXPECT_EQ(p.reply().elements[1].str, binary);
}

TEST(RespDescribeTest, TruncatesLongStringsAndArrays) {
  Reply r;
  r.type = Reply::Type::kArray;
  r.elements.resize(20);
  EXPECT_EQ(describe(r).substr(describe(r).size() - 6), ", ...]");
  Reply s;
  s.type = Reply::Type::kBulkString;
  s.str = std::string(500, 'a');
  EXPECT_EQ(describe(s), "\"" + std::string(120, 'a') + "...\"");
}

TEST(ScriptTest, Sha1IsLowercaseHex) {
  EXPECT_EQ(sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Script("return 1").sha1(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
  EXPECT_EQ(Script("return 1").source(), "return 1");
}

}  // namespace
}  // namespace sluice::redis
