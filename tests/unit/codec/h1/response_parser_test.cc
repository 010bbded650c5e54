// Response heads from upstreams: framing per RFC 9112 6.3, keep-alive, and 502 for every
// malformed or ambiguous head.

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "codec/h1/parser.h"
#include "unit/codec/h1/describe.h"
#include "unit/codec/h1/feed.h"

namespace sluice::h1 {
namespace {

using http::BodyKind;
using http::Method;

struct Accepted {
  const char* name;
  std::string input;
  Method request_method = Method::kGet;
  int status = 200;
  std::string_view reason = "OK";
  int minor = 1;
  BodyKind body = BodyKind::kNone;
  uint64_t length = 0;
  bool keep_alive = true;
  size_t trailing = 0;  // body bytes after the head
};
void PrintTo(const Accepted& c, std::ostream* os) { *os << c.name; }

const Accepted kAccepted[] = {
    {.name = "ok_length",
     .input = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
     .body = BodyKind::kLength,
     .length = 5,
     .trailing = 5},
    {.name = "ok_length_zero", .input = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
    {.name = "equal_duplicate_length",
     .input = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n",
     .body = BodyKind::kLength,
     .length = 7},
    {.name = "chunked",
     .input = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nServer: x\r\n\r\n0\r\n\r\n",
     .body = BodyKind::kChunked,
     .trailing = 5},
    {.name = "no_content_ignores_length",
     .input = "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
     .status = 204,
     .reason = "No Content"},
    {.name = "not_modified",
     .input = "HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\nETag: \"x\"\r\n\r\n",
     .status = 304,
     .reason = "Not Modified"},
    {.name = "head_request",
     .input = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
     .request_method = Method::kHead},
    {.name = "head_request_chunked",
     .input = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
     .request_method = Method::kHead},
    {.name = "continue",
     .input = "HTTP/1.1 100 Continue\r\n\r\n",
     .status = 100,
     .reason = "Continue"},
    {.name = "switching",
     .input = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
     .status = 101,
     .reason = "Switching Protocols"},
    {.name = "connect_tunnel",
     .input = "HTTP/1.1 200 Connection established\r\n\r\n",
     .request_method = Method::kConnect,
     .reason = "Connection established"},
    {.name = "until_close",
     .input = "HTTP/1.1 200 OK\r\nServer: old\r\n\r\nbody...",
     .body = BodyKind::kUntilClose,
     .keep_alive = false,
     .trailing = 7},
    {.name = "http10_length",
     .input = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n",
     .minor = 0,
     .body = BodyKind::kLength,
     .length = 2,
     .keep_alive = false},
    {.name = "http10_keep_alive",
     .input = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n",
     .minor = 0,
     .body = BodyKind::kLength,
     .length = 2},
    {.name = "http10_until_close",
     .input = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",
     .minor = 0,
     .body = BodyKind::kUntilClose,
     .keep_alive = false},
    {.name = "connection_close",
     .input = "HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
     .status = 404,
     .reason = "Not Found",
     .keep_alive = false},
    {.name = "no_reason", .input = "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", .reason = ""},
    {.name = "empty_reason",
     .input = "HTTP/1.1 503 \r\nContent-Length: 0\r\n\r\n",
     .status = 503,
     .reason = ""},
    {.name = "reason_with_spaces_and_tab",
     .input = "HTTP/1.1 500 Internal\tServer  Error\r\nContent-Length: 0\r\n\r\n",
     .status = 500,
     .reason = "Internal\tServer  Error"},
};

std::string parse_text(std::string_view in, Method m) {
  ExactCopy copy(in);
  http::ResponseHead head;
  return describe(parse_response(copy.view(), Limits(), m, &head), head);
}

class ResponseAcceptedTest : public testing::TestWithParam<Accepted> {};

TEST_P(ResponseAcceptedTest, ParsesWhole) {
  const Accepted& c = GetParam();
  http::ResponseHead h;
  ParseResult r = parse_response(c.input, Limits(), c.request_method, &h);
  ASSERT_EQ(r.status, ParseStatus::kComplete) << r.error;
  EXPECT_EQ(r.consumed, c.input.size() - c.trailing);
  EXPECT_EQ(h.status, c.status);
  EXPECT_EQ(h.reason, c.reason);
  EXPECT_EQ(h.version_minor, c.minor);
  EXPECT_EQ(h.body_kind, c.body);
  EXPECT_EQ(h.content_length, c.length);
  EXPECT_EQ(h.keep_alive, c.keep_alive);
}

TEST_P(ResponseAcceptedTest, SameResultAtEverySplit) {
  const Accepted& c = GetParam();
  auto parse = [&c](std::string_view in) { return parse_text(in, c.request_method); };
  EXPECT_EQ(expect_same_at_every_split(c.input, parse), c.input.size() - c.trailing);
}

INSTANTIATE_TEST_SUITE_P(Responses, ResponseAcceptedTest, testing::ValuesIn(kAccepted),
                         [](const auto& info) { return std::string(info.param.name); });

struct Rejected {
  const char* name;
  std::string input;
  const char* error;
};
void PrintTo(const Rejected& c, std::ostream* os) { *os << c.name; }

std::string ok_with(std::string_view fields) {
  return "HTTP/1.1 200 OK\r\n" + std::string(fields) + "\r\n";
}

const Rejected kRejected[] = {
    {"two_digit_status", "HTTP/1.1 20 OK\r\n\r\n", "malformed status line"},
    {"letters_status", "HTTP/1.1 2x0 OK\r\n\r\n", "malformed status line"},
    {"status_below_100", "HTTP/1.1 099 Odd\r\n\r\n", "malformed status line"},
    {"four_digit_status", "HTTP/1.1 2000 OK\r\n\r\n", "malformed status line"},
    {"double_space", "HTTP/1.1  200 OK\r\n\r\n", "malformed status line"},
    {"not_http", "ICY 200 OK\r\n\r\n", "malformed status line"},
    {"empty_status_line", "\r\nHTTP/1.1 200 OK\r\n\r\n", "malformed status line"},
    {"http2", "HTTP/2.0 200 OK\r\n\r\n", "unsupported HTTP version in status line"},
    {"lower_case_version", "http/1.1 200 OK\r\n\r\n", "unsupported HTTP version in status line"},
    {"cl_and_te", ok_with("Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"),
     "both Content-Length and Transfer-Encoding"},
    {"te_gzip", ok_with("Transfer-Encoding: gzip\r\n"), "unsupported transfer coding"},
    {"te_gzip_chunked", ok_with("Transfer-Encoding: gzip, chunked\r\n"),
     "unsupported transfer coding"},
    {"te_chunked_twice", ok_with("Transfer-Encoding: chunked, chunked\r\n"),
     "chunked applied more than once"},
    {"conflicting_cl", ok_with("Content-Length: 3\r\nContent-Length: 4\r\n"),
     "duplicate Content-Length"},
    {"bad_cl", ok_with("Content-Length: 3;x\r\n"), "invalid Content-Length"},
    {"negative_cl", ok_with("Content-Length: -3\r\n"), "invalid Content-Length"},
    {"bad_cl_on_204", "HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n",
     "invalid Content-Length"},
    {"obs_fold", ok_with("X-A: b\r\n c\r\n"), "obs-fold or whitespace before field name"},
    {"space_before_colon", ok_with("Server : x\r\n"), "whitespace before colon"},
    // An upstream's head stays strict: a name a client may send and have ignored is refused.
    {"bad_name_char", ok_with("\"X-A\": x\r\n"), "invalid character in field name"},
    {"nul_in_value", ok_with(std::string("X: a\0\r\n", 7)), "control character in head"},
    {"bare_lf", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", "bare LF"},
    {"bare_cr", ok_with("X: a\rb\r\n"), "bare CR"},
    {"too_many_headers", ok_with([] {
       std::string s;
       for (int i = 0; i < 101; ++i) {
         s += "X: y\r\n";
       }
       return s;
     }()),
     "too many header fields"},
    {"head_too_large", ok_with("X: " + std::string(40000, 'z') + "\r\n"),
     "response head too large"},
    {"status_line_too_long", "HTTP/1.1 200 " + std::string(9000, 'r') + "\r\n\r\n",
     "status line too long"},
};

class ResponseRejectedTest : public testing::TestWithParam<Rejected> {};

TEST_P(ResponseRejectedTest, Rejects502) {
  const Rejected& c = GetParam();
  http::ResponseHead h;
  ParseResult r = parse_response(c.input, Limits(), Method::kGet, &h);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error_status, 502);
  EXPECT_STREQ(r.error, c.error);
  auto parse = [](std::string_view in) { return parse_text(in, Method::kGet); };
  expect_same_at_every_split(c.input, parse);
}

INSTANTIATE_TEST_SUITE_P(Responses, ResponseRejectedTest, testing::ValuesIn(kRejected),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sluice::h1
