// Requests the parser must reject, with the status and reason asserted; every prefix of a
// rejected input is either incomplete or rejected the same way. Also the size limits.

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "codec/h1/parser.h"
#include "unit/codec/h1/describe.h"
#include "unit/codec/h1/feed.h"

namespace sluice::h1 {
namespace {

struct Rejected {
  const char* name;
  std::string input;
  int status;
  const char* error;
};
void PrintTo(const Rejected& c, std::ostream* os) { *os << c.name; }

// A request with Host: a and the given extra field lines.
std::string with_fields(std::string_view fields, std::string_view start = "POST / HTTP/1.1") {
  return std::string(start) + "\r\nHost: a\r\n" + std::string(fields) + "\r\n";
}

std::string long_line(size_t length) {
  std::string line = "GET /";
  line.append(length - line.size() - 9, 'a');
  return line + " HTTP/1.1";
}

std::string huge_header(size_t value_bytes) {
  return with_fields("X-Big: " + std::string(value_bytes, 'b') + "\r\n");
}

std::string headers(int n) {
  std::string s;
  for (int i = 1; i < n; ++i) {
    s += "X-" + std::to_string(i) + ": v\r\n";
  }
  return with_fields(s, "GET / HTTP/1.1");
}

const Rejected kRejected[] = {
    // Framing (request smuggling).
    {"cl_and_te", with_fields("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"), 400,
     "both Content-Length and Transfer-Encoding"},
    {"te_and_cl", with_fields("Transfer-Encoding: chunked\r\nContent-Length: 0\r\n"), 400,
     "both Content-Length and Transfer-Encoding"},
    {"te_gzip", with_fields("Transfer-Encoding: gzip\r\n"), 501, "unsupported transfer coding"},
    {"te_gzip_chunked", with_fields("Transfer-Encoding: gzip, chunked\r\n"), 501,
     "unsupported transfer coding"},
    {"te_identity", with_fields("Transfer-Encoding: identity\r\n"), 501,
     "unsupported transfer coding"},
    {"te_chunked_twice", with_fields("Transfer-Encoding: chunked, chunked\r\n"), 400,
     "chunked applied more than once"},
    {"te_two_lines", with_fields("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
     400, "chunked applied more than once"},
    {"te_chunked_not_last", with_fields("Transfer-Encoding: chunked, gzip\r\n"), 400,
     "chunked is not the final transfer coding"},
    {"te_empty", with_fields("Transfer-Encoding:\r\n"), 400, "malformed Transfer-Encoding"},
    {"te_trailing_comma", with_fields("Transfer-Encoding: chunked,\r\n"), 400,
     "malformed Transfer-Encoding"},
    {"te_quoted", with_fields("Transfer-Encoding: \"chunked\"\r\n"), 400,
     "malformed Transfer-Encoding"},
    {"cl_duplicate_equal", with_fields("Content-Length: 5\r\nContent-Length: 5\r\n"), 400,
     "duplicate Content-Length"},
    {"cl_duplicate_differ", with_fields("Content-Length: 5\r\nContent-Length: 6\r\n"), 400,
     "duplicate Content-Length"},
    {"cl_plus", with_fields("Content-Length: +5\r\n"), 400, "invalid Content-Length"},
    {"cl_minus", with_fields("Content-Length: -1\r\n"), 400, "invalid Content-Length"},
    {"cl_hex", with_fields("Content-Length: 0x10\r\n"), 400, "invalid Content-Length"},
    {"cl_list", with_fields("Content-Length: 1,1\r\n"), 400, "invalid Content-Length"},
    {"cl_inner_space", with_fields("Content-Length: 1 2\r\n"), 400, "invalid Content-Length"},
    {"cl_empty", with_fields("Content-Length:\r\n"), 400, "invalid Content-Length"},
    {"cl_overflow", with_fields("Content-Length: 99999999999999999999\r\n"), 400,
     "invalid Content-Length"},
    {"cl_2_pow_63", with_fields("Content-Length: 9223372036854775808\r\n"), 400,
     "invalid Content-Length"},
    {"te_in_http10", with_fields("Transfer-Encoding: chunked\r\n", "POST / HTTP/1.0"), 400,
     "Transfer-Encoding in HTTP/1.0"},
    // Line and field syntax.
    {"obs_fold", with_fields("X-A: b\r\n  c\r\n"), 400, "obs-fold or whitespace before field name"},
    {"obs_fold_tab", with_fields("X-A: b\r\n\tc\r\n"), 400,
     "obs-fold or whitespace before field name"},
    {"space_after_request_line", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400,
     "obs-fold or whitespace before field name"},
    {"space_before_colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, "whitespace before colon"},
    {"empty_name", with_fields(": v\r\n"), 400, "empty field name"},
    // A visible non-token character is ignored (parser_test.cc); a control character is not.
    {"bad_name_char", with_fields("X\x01Y: v\r\n"), 400, "invalid character in field name"},
    {"bad_name_high_byte", with_fields("X\xc3\xa9: v\r\n"), 400, "invalid character in field name"},
    {"no_colon", with_fields("NoColon\r\n"), 400, "field line without colon"},
    {"nul_in_value", with_fields(std::string("X-A: a\0b\r\n", 10)), 400,
     "control character in head"},
    {"del_in_value", with_fields("X-A: a\x7f\r\n"), 400, "control character in head"},
    {"bare_lf_field", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400, "bare LF"},
    {"bare_lf_request_line", "GET / HTTP/1.1\nHost: a\r\n\r\n", 400, "bare LF"},
    {"bare_lf_end", "GET / HTTP/1.1\r\nHost: a\r\n\n", 400, "bare LF"},
    {"bare_lf_leading", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "bare LF"},
    {"bare_cr_value", with_fields("X-A: a\rb\r\n"), 400, "bare CR"},
    {"bare_cr_end", "GET / HTTP/1.1\r\nHost: a\r\n\rX", 400, "bare CR"},
    {"bare_cr_leading", "\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "bare CR"},
    // Host.
    {"missing_host", "GET / HTTP/1.1\r\nX: y\r\n\r\n", 400, "missing Host"},
    {"missing_host_absolute", "GET http://a/ HTTP/1.1\r\n\r\n", 400, "missing Host"},
    {"two_hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400, "multiple Host fields"},
    {"two_hosts_http10", "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400,
     "multiple Host fields"},
    {"host_userinfo", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400, "invalid Host"},
    {"host_space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "invalid Host"},
    // Request line.
    {"http20", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, "unsupported HTTP version"},
    {"http12", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505, "unsupported HTTP version"},
    {"http09", "GET /\r\n\r\n", 400, "missing HTTP version"},
    {"version_garbage", "GET / HTTX/1.1\r\nHost: a\r\n\r\n", 400, "invalid HTTP version"},
    {"version_lower_case", "GET / http/1.1\r\nHost: a\r\n\r\n", 400, "invalid HTTP version"},
    {"version_short", "GET / HTTP/1\r\nHost: a\r\n\r\n", 400, "invalid HTTP version"},
    {"trailing_space", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400, "invalid HTTP version"},
    {"method_bad_char", "G@T / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid method"},
    {"method_paren", "GE(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid method"},
    {"method_empty", " / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid method"},
    {"method_tab", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid method"},
    // Methods are case-sensitive (RFC 9110 9.1) and nginx takes only A-Z, `_` and `-`.
    {"method_lower_case", "get / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid method"},
    {"method_mixed_case", "Get / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid method"},
    {"method_digit", "GET2 / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid method"},
    {"method_tchar_dot", "M.SEARCH / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid method"},
    {"double_space", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid request-target"},
    {"target_tab", "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid request-target"},
    {"target_control", "GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400, "control character in head"},
    {"target_del", "GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400, "control character in head"},
    {"target_relative", "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid request-target"},
    {"asterisk_get", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400, "asterisk-form is only for OPTIONS"},
    {"connect_origin_form", "CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n", 400,
     "CONNECT target must be host:port"},
    {"connect_no_port", "CONNECT a.com HTTP/1.1\r\nHost: a\r\n\r\n", 400,
     "CONNECT target must be host:port"},
    {"absolute_ftp", "GET ftp://a/b HTTP/1.1\r\nHost: a\r\n\r\n", 400, "invalid request-target"},
    {"absolute_userinfo", "GET http://u:p@a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400,
     "invalid authority in request-target"},
    {"absolute_no_authority", "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", 400,
     "invalid authority in request-target"},
    // A path that cannot be normalised (http/path.h has the whole table).
    {"path_above_root", "GET /a/../../x HTTP/1.1\r\nHost: a\r\n\r\n", 400, "'..' above the root"},
    {"path_nul", "GET /a%00b?q HTTP/1.1\r\nHost: a\r\n\r\n", 400, "NUL byte in path"},
    {"path_bad_escape", "GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", 400, "bad percent-escape in path"},
    {"path_backslash", "GET /a\\..\\b HTTP/1.1\r\nHost: a\r\n\r\n", 400, "backslash in path"},
    {"absolute_path_above_root", "GET http://a/.. HTTP/1.1\r\nHost: a\r\n\r\n", 400,
     "'..' above the root"},
    // Limits.
    {"request_line_8001", long_line(8001) + "\r\nHost: a\r\n\r\n", 414, "request line too long"},
    {"huge_header", huge_header(40000), 431, "request head too large"},
    {"headers_101", headers(101), 431, "too many header fields"},
};

std::string parse_text(std::string_view in) {
  ExactCopy copy(in);
  http::RequestHead head;
  return describe(parse_request(copy.view(), Limits(), &head), head);
}

class RejectedTest : public testing::TestWithParam<Rejected> {};

TEST_P(RejectedTest, RejectsWhole) {
  const Rejected& c = GetParam();
  http::RequestHead h;
  ParseResult r = parse_request(c.input, Limits(), &h);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error_status, c.status);
  EXPECT_STREQ(r.error, c.error);
}

TEST_P(RejectedTest, RejectsTheSameAtEverySplit) {
  expect_same_at_every_split(GetParam().input, parse_text);
}

INSTANTIATE_TEST_SUITE_P(Requests, RejectedTest, testing::ValuesIn(kRejected),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RequestLimitsTest, RequestLineOf8000IsAccepted) {
  EXPECT_EQ(long_line(8000).size(), 8000u);
  std::string in = long_line(8000) + "\r\nHost: a\r\n\r\n";
  http::RequestHead h;
  ParseResult r = parse_request(in, Limits(), &h);
  ASSERT_EQ(r.status, ParseStatus::kComplete) << r.error;
  EXPECT_EQ(h.target.size(), 8000u - 13);
}

TEST(RequestLimitsTest, LongRequestLineFailsBeforeItEnds) {
  http::RequestHead h;
  std::string line = long_line(9000);
  EXPECT_EQ(parse_request(line.substr(0, 8000), Limits(), &h).status, ParseStatus::kIncomplete);
  EXPECT_EQ(parse_request(line.substr(0, 8001), Limits(), &h).error_status, 414);
  // 8000 bytes and a CR: the line may still end in time.
  EXPECT_EQ(parse_request(long_line(8000) + "\r", Limits(), &h).status, ParseStatus::kIncomplete);
}

TEST(RequestLimitsTest, HeadAtTheLimitIsAcceptedOneMoreIsNot) {
  Limits limits;
  std::string in = huge_header(0);
  size_t pad = limits.max_header_bytes - in.size();
  in = huge_header(pad);
  ASSERT_EQ(in.size(), limits.max_header_bytes);
  http::RequestHead h;
  EXPECT_EQ(parse_request(in, limits, &h).status, ParseStatus::kComplete);
  in = huge_header(pad + 1);
  ParseResult r = parse_request(in, limits, &h);
  EXPECT_EQ(r.error_status, 431);
  // Already while incomplete, as soon as the limit is passed.
  EXPECT_EQ(parse_request(std::string_view(in).substr(0, limits.max_header_bytes + 1), limits, &h)
                .error_status,
            431);
  EXPECT_EQ(
      parse_request(std::string_view(in).substr(0, limits.max_header_bytes), limits, &h).status,
      ParseStatus::kIncomplete);
}

TEST(RequestLimitsTest, HeaderCountLimitIsConfigurable) {
  Limits limits;
  limits.max_headers = 3;
  http::RequestHead h;
  EXPECT_EQ(parse_request(headers(3), limits, &h).status, ParseStatus::kComplete);
  ParseResult r = parse_request(headers(4), limits, &h);
  EXPECT_EQ(r.error_status, 431);
  EXPECT_STREQ(r.error, "too many header fields");
  limits.max_headers = 1000;  // never beyond the array
  EXPECT_EQ(parse_request(headers(101), limits, &h).error_status, 431);
}

TEST(RequestLimitsTest, SmallLimits) {
  Limits limits;
  limits.max_request_line = 10;
  limits.max_header_bytes = 30;
  http::RequestHead h;
  EXPECT_EQ(parse_request("GET /12345 HTTP/1.1\r\n", limits, &h).error_status, 414);
  EXPECT_EQ(parse_request("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n", limits, &h).error_status, 414);
  limits.max_request_line = 100;
  EXPECT_EQ(parse_request("GET /1 HTTP/1.1\r\nHost: a\r\n\r\n", limits, &h).status,
            ParseStatus::kComplete);
  EXPECT_EQ(parse_request("GET /1 HTTP/1.1\r\nHost: a\r\nX: y\r\n", limits, &h).error_status, 431);
}

}  // namespace
}  // namespace sluice::h1
