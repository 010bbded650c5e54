// Requests the parser must accept: each parsed whole, at every prefix and at random read
// boundaries, always to the same result.

#include "codec/h1/parser.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "unit/codec/h1/describe.h"
#include "unit/codec/h1/feed.h"

namespace sluice::h1 {
namespace {

using http::BodyKind;
using http::Method;

struct Accepted {
  const char* name;
  std::string input;
  Method method = Method::kGet;
  std::string_view path = "/";
  std::string_view query = "";
  std::string_view authority = "";
  std::string_view host = "a";
  int minor = 1;
  BodyKind body = BodyKind::kNone;
  uint64_t length = 0;
  bool keep_alive = true;
  bool expect_continue = false;
  size_t num_headers = 1;
  size_t trailing = 0;  // bytes after the head (a body, the next request)
};
void PrintTo(const Accepted& c, std::ostream* os) { *os << c.name; }

std::string many_headers(int n) {
  std::string s = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 1; i < n; ++i) {
    s += "X-H" + std::to_string(i) + ": v" + std::to_string(i) + "\r\n";
  }
  return s + "\r\n";
}

const Accepted kAccepted[] = {
    {.name = "wrk",
     .input = "GET / HTTP/1.1\r\nHost: localhost:8080\r\n\r\n",
     .host = "localhost:8080"},
    {.name = "curl",
     .input = "GET /index.html?x=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8.5.0\r\n"
              "Accept: */*\r\n\r\n",
     .path = "/index.html",
     .query = "x=1",
     .host = "example.com",
     .num_headers = 3},
    {.name = "post_length",
     .input = "POST /api HTTP/1.1\r\nHost: a\r\nContent-Length: 13\r\n\r\nhello, world!",
     .method = Method::kPost,
     .path = "/api",
     .body = BodyKind::kLength,
     .length = 13,
     .num_headers = 2,
     .trailing = 13},
    {.name = "post_length_zero",
     .input = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
     .method = Method::kPost,
     .num_headers = 2},
    {.name = "chunked_expect",
     .input = "PUT /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
              "Expect: 100-continue\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
     .method = Method::kPut,
     .path = "/up",
     .body = BodyKind::kChunked,
     .expect_continue = true,
     .num_headers = 3,
     .trailing = 15},
    {.name = "chunked_case_insensitive",
     .input = "POST / HTTP/1.1\r\nHost: a\r\ntransfer-encoding: Chunked\r\n"
              "EXPECT: 100-Continue\r\n\r\n",
     .method = Method::kPost,
     .body = BodyKind::kChunked,
     .expect_continue = true,
     .num_headers = 3},
    {.name = "absolute_form",
     .input = "GET http://example.com:8080/a/b?c=d HTTP/1.1\r\nHost: other\r\n\r\n",
     .path = "/a/b",
     .query = "c=d",
     .authority = "example.com:8080",
     .host = "example.com:8080"},
    {.name = "absolute_form_no_path",
     .input = "GET HTTPS://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n",
     .authority = "example.com",
     .host = "example.com"},
    {.name = "absolute_form_query_only",
     .input = "GET http://[::1]:80?q HTTP/1.1\r\nHost: x\r\n\r\n",
     .query = "q",
     .authority = "[::1]:80",
     .host = "[::1]:80"},
    {.name = "options_asterisk",
     .input = "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
     .method = Method::kOptions,
     .path = "*"},
    {.name = "connect",
     .input = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
     .method = Method::kConnect,
     .path = "",
     .authority = "example.com:443",
     .host = "example.com:443"},
    {.name = "http10_keep_alive",
     .input = "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
     .host = "",
     .minor = 0},
    {.name = "http10_default_close",
     .input = "GET /x HTTP/1.0\r\nHost: a\r\n\r\n",
     .path = "/x",
     .minor = 0,
     .keep_alive = false},
    {.name = "http10_expect_ignored",
     .input = "GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n",
     .host = "",
     .minor = 0,
     .keep_alive = false},
    {.name = "connection_close",
     .input = "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, CLOSE\r\n\r\n",
     .keep_alive = false,
     .num_headers = 2},
    {.name = "connection_lines",
     .input = "GET / HTTP/1.1\r\nConnection: keep-alive\r\nHost: a\r\nConnection: x, close\r\n\r\n",
     .keep_alive = false,
     .num_headers = 3},
    {.name = "close_beats_keep_alive_10",
     .input = "GET / HTTP/1.0\r\nConnection: keep-alive,close\r\n\r\n",
     .host = "",
     .minor = 0,
     .keep_alive = false},
    {.name = "pipelined",
     .input = "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n",
     .path = "/1",
     .trailing = 28},
    {.name = "many_headers", .input = many_headers(100), .num_headers = 100},
    {.name = "query_string",
     .input = "GET /s?q=a+b&x=%20&y HTTP/1.1\r\nHost: a\r\n\r\n",
     .path = "/s",
     .query = "q=a+b&x=%20&y"},
    {.name = "empty_query", .input = "GET /p? HTTP/1.1\r\nHost: a\r\n\r\n", .path = "/p"},
    {.name = "question_in_query",
     .input = "GET /p??a HTTP/1.1\r\nHost: a\r\n\r\n",
     .path = "/p",
     .query = "?a"},
    {.name = "ows_trimmed",
     .input = "GET / HTTP/1.1\r\nHost:a\r\nX-A: \t v a \t\r\nX-Empty:\r\nX-Sp:   \r\n\r\n",
     .num_headers = 4},
    {.name = "leading_empty_lines", .input = "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"},
    {.name = "obs_text_value",
     .input = "GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\nX-U: caf\xc3\xa9\r\n\r\n",
     .path = "/\xc3\xa9",
     .num_headers = 2},
    {.name = "unknown_method",
     .input = "PROPFIND /d HTTP/1.1\r\nHost: a\r\n\r\n",
     .method = Method::kOther,
     .path = "/d"},
    {.name = "dashed_method",
     .input = "M-SEARCH / HTTP/1.1\r\nHost: a\r\n\r\n",
     .method = Method::kOther},
    {.name = "underscored_method",
     .input = "BASELINE_CONTROL / HTTP/1.1\r\nHost: a\r\n\r\n",
     .method = Method::kOther},
    // underscores_in_headers off: the `_` fields vanish from the head, the request stands.
    {.name = "underscored_fields_dropped",
     .input = "GET / HTTP/1.1\r\nX_A: 1\r\nHost: a\r\nTransfer_Encoding: chunked\r\n"
              "Content_Length: 5\r\n\r\n",
     .num_headers = 1},
    // ignore_invalid_headers, as nginx: names with visible non-token characters vanish too,
    // and a framing name so spelt frames nothing.
    {.name = "invalid_names_dropped",
     .input = "GET / HTTP/1.1\r\n\"X-Api-Version\": v2\r\nHost: a\r\nX(Y: 1\r\n"
              "Transfer-Encoding\": chunked\r\n{Content-Length}: 5\r\n\r\n",
     .num_headers = 1},
    {.name = "host_ipv6_port",
     .input = "DELETE /r HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
     .method = Method::kDelete,
     .path = "/r",
     .host = "[::1]:8080"},
    {.name = "empty_host",
     .input = "HEAD / HTTP/1.1\r\nHost:\r\n\r\n",
     .method = Method::kHead,
     .host = ""},
    {.name = "large_content_length",
     .input = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775807\r\n\r\n",
     .method = Method::kPost,
     .body = BodyKind::kLength,
     .length = 9223372036854775807ull,
     .num_headers = 2},
    {.name = "content_length_leading_zero",
     .input = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\n",
     .method = Method::kPost,
     .body = BodyKind::kLength,
     .length = 7,
     .num_headers = 2},
};

std::string parse_text(std::string_view in) {
  ExactCopy copy(in);
  http::RequestHead head;
  ParseResult r = parse_request(copy.view(), Limits(), &head);
  return describe(r, head);
}

class AcceptedTest : public testing::TestWithParam<Accepted> {};

TEST_P(AcceptedTest, ParsesWhole) {
  const Accepted& c = GetParam();
  http::RequestHead h;
  ParseResult r = parse_request(c.input, Limits(), &h);
  ASSERT_EQ(r.status, ParseStatus::kComplete) << r.error_status << " " << r.error;
  EXPECT_EQ(r.consumed, c.input.size() - c.trailing);
  EXPECT_EQ(h.method, c.method);
  EXPECT_EQ(h.path, c.path);
  EXPECT_EQ(h.query, c.query);
  EXPECT_EQ(h.authority, c.authority);
  EXPECT_EQ(h.host, c.host);
  EXPECT_EQ(h.version_minor, c.minor);
  EXPECT_EQ(h.body_kind, c.body);
  EXPECT_EQ(h.content_length, c.length);
  EXPECT_EQ(h.keep_alive, c.keep_alive);
  EXPECT_EQ(h.expect_continue, c.expect_continue);
  EXPECT_EQ(h.num_headers, c.num_headers);
  // Zero-copy: the target is a view into the caller's buffer.
  EXPECT_GE(h.target.data(), c.input.data());
  EXPECT_LE(h.target.data() + h.target.size(), c.input.data() + c.input.size());
}

TEST_P(AcceptedTest, SameResultAtEverySplit) {
  const Accepted& c = GetParam();
  size_t consumed = c.input.size() - c.trailing;
  EXPECT_EQ(parse_text(std::string_view(c.input).substr(0, consumed - 1)), kIncompleteText);
  size_t first = expect_same_at_every_split(c.input, parse_text);
  if (c.input.size() <= 4096) {
    EXPECT_EQ(first, consumed);
  }
}

INSTANTIATE_TEST_SUITE_P(Requests, AcceptedTest, testing::ValuesIn(kAccepted),
                         [](const auto& info) { return std::string(info.param.name); });

// uri is the normalised path routes match; path and target stay as sent (they are forwarded).
TEST(RequestParserTest, UriIsNormalisedPathAndTargetStayRaw) {
  const std::string in = "GET //x/../%73ecret/a?b=%2F HTTP/1.1\r\nHost: a\r\n\r\n";
  http::RequestHead h;
  ASSERT_EQ(parse_request(in, Limits(), &h).status, ParseStatus::kComplete);
  EXPECT_EQ(h.uri, "/secret/a");
  EXPECT_EQ(h.path, "//x/../%73ecret/a");
  EXPECT_EQ(h.query, "b=%2F");
  EXPECT_EQ(h.target, "//x/../%73ecret/a?b=%2F");
  // A normal path is not copied: uri is a view of the input.
  const std::string plain = "GET /secret/a?x HTTP/1.1\r\nHost: a\r\n\r\n";
  ASSERT_EQ(parse_request(plain, Limits(), &h).status, ParseStatus::kComplete);
  EXPECT_EQ(h.uri.data(), h.path.data());
  EXPECT_EQ(h.uri, "/secret/a");
}

TEST(RequestParserTest, AbsoluteFormUriIsNormalised) {
  const std::string in = "GET http://a.com//b/./c HTTP/1.1\r\nHost: a\r\n\r\n";
  http::RequestHead h;
  ASSERT_EQ(parse_request(in, Limits(), &h).status, ParseStatus::kComplete);
  EXPECT_EQ(h.path, "//b/./c");
  EXPECT_EQ(h.uri, "/b/c");
  const std::string star = "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n";
  ASSERT_EQ(parse_request(star, Limits(), &h).status, ParseStatus::kComplete);
  EXPECT_EQ(h.uri, "*");
}

TEST(RequestParserTest, TrimsValuesAndKeepsHeaderOrder) {
  std::string in = "GET / HTTP/1.1\r\nHost:a\r\nX-A: \t v a \t\r\nX-Empty:\r\n\r\n";
  http::RequestHead h;
  ASSERT_EQ(parse_request(in, Limits(), &h).status, ParseStatus::kComplete);
  ASSERT_EQ(h.num_headers, 3u);
  EXPECT_EQ(h.headers[0].name, "Host");
  EXPECT_EQ(h.headers[0].value, "a");
  EXPECT_EQ(h.headers[1].value, "v a");
  EXPECT_EQ(h.headers[2].name, "X-Empty");
  EXPECT_EQ(h.headers[2].value, "");
  ASSERT_NE(h.find("x-a"), nullptr);
  EXPECT_EQ(h.find("x-a")->value, "v a");
}

TEST(RequestParserTest, UnderscoredFieldsDroppedUnlessAllowed) {
  const std::string in =
      "POST / HTTP/1.1\r\nX_Api_Key: k\r\nHost: a\r\nTransfer_Encoding: chunked\r\n"
      "Content-Length: 2\r\nX-B: b\r\n\r\nhi";
  http::RequestHead h;
  ASSERT_EQ(parse_request(in, Limits(), &h).status, ParseStatus::kComplete);
  ASSERT_EQ(h.num_headers, 3u);
  EXPECT_EQ(h.headers[0].name, "Host");
  EXPECT_EQ(h.headers[1].name, "Content-Length");
  EXPECT_EQ(h.headers[2].name, "X-B");
  EXPECT_EQ(h.find("x_api_key"), nullptr);
  EXPECT_EQ(h.body_kind, BodyKind::kLength);

  Limits on;
  on.underscores_in_headers = true;
  ASSERT_EQ(parse_request(in, on, &h).status, ParseStatus::kComplete);
  ASSERT_EQ(h.num_headers, 5u);
  ASSERT_NE(h.find("x_api_key"), nullptr);
  EXPECT_EQ(h.find("x_api_key")->value, "k");
  // Kept, yet never framing: only Transfer-Encoding with a hyphen is.
  EXPECT_EQ(h.body_kind, BodyKind::kLength);
  EXPECT_EQ(h.content_length, 2u);
}

TEST(RequestParserTest, ReusedHeadIsReset) {
  http::RequestHead h;
  std::string post = "POST /a?b HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
  ASSERT_EQ(parse_request(post, Limits(), &h).status, ParseStatus::kComplete);
  std::string get = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  ASSERT_EQ(parse_request(get, Limits(), &h).status, ParseStatus::kComplete);
  EXPECT_EQ(parse_text(get), describe(parse_request(get, Limits(), &h), h));
  EXPECT_EQ(h.query, "");
  EXPECT_EQ(h.body_kind, BodyKind::kNone);
  EXPECT_EQ(h.content_length, 0u);
  EXPECT_EQ(h.num_headers, 1u);
}

TEST(RequestParserTest, EmptyBufferIsIncomplete) {
  http::RequestHead h;
  EXPECT_EQ(parse_request("", Limits(), &h).status, ParseStatus::kIncomplete);
  EXPECT_EQ(parse_request("\r\n", Limits(), &h).status, ParseStatus::kIncomplete);
}

}  // namespace
}  // namespace sluice::h1
