// The renderer: APISIX's default line field by field, every variable, the three escapes and
// what each prints for a value that is not there.

#include "accesslog/render.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "accesslog/escape.h"
#include "unit/router/fake_request.h"

namespace sluice::accesslog {
namespace {

using router::testing::FakeRequest;

constexpr timespec kNow = {1727517600, 123456789};  // 2024-09-28T10:00:00.123Z

class AccessLogRender : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
    rec_.conn.remote_addr = "192.0.2.7";
    rec_.conn.server_port = 9080;
    rec_.status = 200;
    rec_.body_bytes_sent = 12;
    rec_.bytes_sent = 180;
    rec_.request_length = 95;
    rec_.request_ms = 4;
  }

  // `format`'s line for rec_, the head variables captured from req_ (none when `head` is
  // false), without its newline.
  std::string line(std::string_view format, Escape e = Escape::kDefault, bool head = true) {
    auto f = Format::compile(format, e);
    EXPECT_TRUE(f.is_ok()) << f.status().message();
    if (!f.is_ok()) {
      return "<error>";
    }
    rec_.head = nullptr;
    if (head) {
      captured_.capture(*f, req_.ctx, raw_);
      rec_.head = &captured_;
    }
    LineBuffer buf;
    renderer_.render(*f, rec_, kNow, &buf);
    std::string out(buf.view());
    EXPECT_EQ(out.back(), '\n');
    out.pop_back();
    return out;
  }

  FakeRequest req_{"GET",
                   "/get?page=2&x=",
                   "example.com:9080",
                   {{"Host", "example.com:9080"},
                    {"User-Agent", "curl/8.5.0"},
                    {"Referer", "http://r.example/"},
                    {"Authorization", "Basic dXNlcjpwYXNz"},
                    {"Cookie", "session=abc; theme=dark"},
                    {"Content-Type", "text/plain"},
                    {"X-Forwarded-For", "10.0.0.1"}},
                   "192.0.2.7",
                   9080};
  std::string raw_ = "GET /get?page=2&x= HTTP/1.1\r\nHost: example.com:9080\r\n\r\n";
  Record rec_;
  Captured captured_;
  Renderer renderer_;
};

TEST_F(AccessLogRender, ApisixDefaultLine) {
  std::vector<UpstreamTry> tries = {{"10.0.0.5:80", 502, 0, -1, -1, 3},
                                    {"10.0.0.6:80", 200, 3, 0, 1, 4}};
  rec_.tries = tries;
  rec_.has_upstream_host = true;
  rec_.upstream_host = "example.com:9080";
  EXPECT_EQ(line(kApisixFormat),
            "192.0.2.7 - user [28/Sep/2024:10:00:00 +0000] example.com:9080 \"GET /get?page=2&x= "
            "HTTP/1.1\" 200 12 0.004 \"http://r.example/\" \"curl/8.5.0\" 10.0.0.5:80, "
            "10.0.0.6:80 502, 200 0.003, 0.004 \"http://example.com:9080\"");
}

TEST_F(AccessLogRender, GatewayAnswerHasNoUpstream) {
  // A 404: no try; $upstream_host falls back to $http_host and $upstream_uri is empty.
  rec_.status = 404;
  EXPECT_EQ(line("$status $upstream_addr $upstream_status $upstream_response_time "
                 "\"$upstream_scheme://$upstream_host$upstream_uri\""),
            "404 - - - \"http://example.com:9080\"");
}

struct VarCase {
  const char* format;
  const char* expect;
};

TEST_F(AccessLogRender, EveryVariable) {
  std::vector<UpstreamTry> tries = {{"10.0.0.5:80", 0, 0, -1, -1, 1500},
                                    {"10.0.0.6:443", 201, 0, 2, 7, 9}};
  rec_.tries = tries;
  rec_.upstream_tls = true;
  rec_.upstream_uri = "/anything?x=1";
  rec_.remote_port = 51234;
  rec_.server_addr = "127.0.0.1";
  rec_.route_id = "r1";
  rec_.route_name = "users";
  rec_.service_id = "s1";
  rec_.service_name = "svc";
  rec_.consumer_name = "jack";
  rec_.request_id = "abc-123";
  rec_.request_ms = 61234;
  const VarCase kCases[] = {
      {"$remote_addr", "192.0.2.7"},
      {"$remote_port", "51234"},
      {"$remote_user", "user"},
      {"$time_local", "28/Sep/2024:10:00:00 +0000"},
      {"$time_iso8601", "2024-09-28T10:00:00+00:00"},
      {"$msec", "1727517600.123"},
      {"$request", "GET /get?page=2&x= HTTP/1.1"},
      {"$status", "200"},
      {"$body_bytes_sent", "12"},
      {"$bytes_sent", "180"},
      {"$request_length", "95"},
      {"$request_time", "61.234"},
      {"$upstream_addr", "10.0.0.5:80, 10.0.0.6:443"},
      {"$upstream_status", "-, 201"},
      {"$upstream_response_time", "1.500, 0.009"},
      {"$upstream_connect_time", "-, 0.002"},
      {"$upstream_header_time", "-, 0.007"},
      {"$upstream_scheme", "https"},
      {"$upstream_host", "example.com:9080"},
      {"$upstream_uri", "/anything?x=1"},
      {"$http_referer", "http://r.example/"},
      {"$http_user_agent", "curl/8.5.0"},
      {"$http_x_forwarded_for", "10.0.0.1"},
      {"$HTTP_USER_AGENT", "curl/8.5.0"},
      {"$http_host", "example.com:9080"},
      {"$http_x_missing", "-"},
      {"$arg_page", "2"},
      {"$arg_x", ""},
      {"$arg_missing", "-"},
      {"$cookie_theme", "dark"},
      {"$uri", "/get"},
      {"$document_uri", "/get"},
      {"$request_uri", "/get?page=2&x="},
      {"$args", "page=2&x="},
      {"$query_string", "page=2&x="},
      {"$is_args", "?"},
      {"$host", "example.com"},
      {"$request_method", "GET"},
      {"$scheme", "http"},
      {"$https", ""},
      {"$server_addr", "127.0.0.1"},
      {"$server_port", "9080"},
      {"$server_protocol", "HTTP/1.1"},
      {"$request_id", "abc-123"},
      {"$route_id", "r1"},
      {"$route_name", "users"},
      {"$service_id", "s1"},
      {"$service_name", "svc"},
      {"$consumer_name", "jack"},
      {"$content_type", "text/plain"},
      {"$content_length", "-"},
      {"$ssl_protocol", "-"},  // plaintext: not there
      {"$ssl_cipher", "-"},
  };
  for (const VarCase& c : kCases) {
    SCOPED_TRACE(c.format);
    EXPECT_EQ(line(c.format), c.expect);
  }
  EXPECT_EQ(line("$pid"), std::to_string(getpid()));
  EXPECT_FALSE(line("$hostname").empty());
}

TEST_F(AccessLogRender, TlsVariables) {
  router::TlsInfo tls;
  tls.protocol = "TLSv1.3";
  tls.cipher = "TLS_AES_256_GCM_SHA384";
  tls.server_name = "api.example.com";
  tls.session_reused = true;
  rec_.conn.tls = &tls;
  EXPECT_EQ(line("$scheme $https $ssl_protocol $ssl_cipher $ssl_server_name $ssl_session_reused "
                 "$ssl_client_verify"),
            "https on TLSv1.3 TLS_AES_256_GCM_SHA384 api.example.com r NONE");
}

TEST_F(AccessLogRender, NotThere) {
  // Nothing of the head was captured (a request that never parsed), no route, no try.
  EXPECT_EQ(line("$request|$remote_user|$http_host|$route_id|$upstream_addr|$consumer_name",
                 Escape::kDefault, false),
            "-|-|-|-|-|-");
  EXPECT_EQ(line("{\"r\":\"$request\",\"u\":\"$remote_user\",\"a\":\"$upstream_addr\"}",
                 Escape::kJson, false),
            "{\"r\":\"\",\"u\":\"\",\"a\":\"\"}");
  EXPECT_EQ(line("[$request][$route_id]", Escape::kNone, false), "[][]");
}

TEST_F(AccessLogRender, RemoteUser) {
  struct Case {
    const char* authorization;
    const char* expect;
  };
  const Case kCases[] = {
      {"Basic dXNlcjpwYXNz", "user"},
      {"basic   dXNlcjpwYXNz", "user"},
      {"Basic bm9jb2xvbg==", "-"},  // "nocolon"
      {"Basic !!!", "-"},
      {"Bearer dXNlcjpwYXNz", "-"},
      {"Basic YWwiaWNlOnB3", "al\\x22ice"},  // al"ice:pw, escaped as nginx does
  };
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.authorization);
    FakeRequest req{"GET", "/", "h", {{"Authorization", c.authorization}}};
    auto f = Format::compile("$remote_user", Escape::kDefault);
    ASSERT_TRUE(f.is_ok());
    captured_.capture(*f, req.ctx, {});
    rec_.head = &captured_;
    LineBuffer out;
    renderer_.render(*f, rec_, kNow, &out);
    EXPECT_EQ(out.view(), std::string(c.expect) + "\n");
  }
}

TEST_F(AccessLogRender, RequestLineRebuiltWithoutRawBytes) {
  raw_.clear();
  EXPECT_EQ(line("$request"), "GET /get?page=2&x= HTTP/1.1");
}

TEST_F(AccessLogRender, GeneratedRequestIdsDiffer) {
  std::string a = line("$request_id");
  std::string b = line("$request_id");
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_NE(a, b);
}

TEST(AccessLogEscape, Default) {
  LineBuffer out;
  append_default_escaped(std::string_view("a\"b\\c\x01\x1f\x7f\xc3\xa9 ~\n", 13), &out);
  EXPECT_EQ(out.view(), "a\\x22b\\x5Cc\\x01\\x1F\\x7F\\xC3\\xA9 ~\\x0A");
}

TEST(AccessLogEscape, Json) {
  LineBuffer out;
  append_json_escaped(std::string_view("a\"b\\c\n\r\t\b\f\x01\x1f\x7f\xc3\xa9/", 16), &out);
  EXPECT_EQ(out.view(), "a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001F\x7f\xc3\xa9/");
}

// The escapes check 8 bytes at a time: every byte value at every position of strings up to
// 40 bytes (the 16- and 8-byte paths and the tails), against a byte-by-byte reference.
TEST(AccessLogEscape, EveryByteAtEveryPosition) {
  auto reference = [](std::string_view v, bool json) {
    std::string out;
    for (unsigned char c : v) {
      bool quote = c == '"' || c == '\\';
      if (!json && (c < 0x20 || c >= 0x7f || quote)) {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\x%02X", c);
        out += buf;
      } else if (json && quote) {
        out += '\\';
        out += static_cast<char>(c);
      } else if (json && c < 0x20) {
        std::string_view named = c == '\n'   ? "\\n"
                                 : c == '\r' ? "\\r"
                                 : c == '\t' ? "\\t"
                                 : c == '\b' ? "\\b"
                                 : c == '\f' ? "\\f"
                                             : "";
        if (named.empty()) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u00%02X", c);
          out += buf;
        } else {
          out += named;
        }
      } else {
        out += static_cast<char>(c);
      }
    }
    return out;
  };
  for (size_t len = 1; len <= 40; ++len) {
    for (size_t pos = 0; pos < len; ++pos) {
      for (int c = 0; c < 256; ++c) {
        std::string v(len, 'a');
        v[pos] = static_cast<char>(c);
        LineBuffer d, j;
        append_default_escaped(v, &d);
        append_json_escaped(v, &j);
        ASSERT_EQ(d.view(), reference(v, false)) << len << " " << pos << " " << c;
        ASSERT_EQ(j.view(), reference(v, true)) << len << " " << pos << " " << c;
      }
    }
  }
}

TEST_F(AccessLogRender, EscapesApplyToValuesOnly) {
  FakeRequest req{"GET", "/", "h", {{"User-Agent", "say \"hi\"\\"}}};
  req_.head.headers[1] = req.head.headers[0];  // User-Agent with quotes and a backslash
  EXPECT_EQ(line("\"$http_user_agent\""), "\"say \\x22hi\\x22\\x5C\"");
  EXPECT_EQ(line("{\"ua\":\"$http_user_agent\"}", Escape::kJson),
            "{\"ua\":\"say \\\"hi\\\"\\\\\"}");
  EXPECT_EQ(line("\"$http_user_agent\"", Escape::kNone), "\"say \"hi\"\\\"");
}

}  // namespace
}  // namespace sluice::accesslog
