// The format compiler: APISIX's default format, nginx's $name and ${name}, names read
// case-insensitively, and every kind of refusal with its text.

#include "accesslog/format.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::accesslog {
namespace {

TEST(AccessLogFormat, CompilesApisixDefault) {
  auto f = Format::compile(kApisixFormat, Escape::kDefault);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  int vars = 0;
  std::string literals;
  for (const Part& p : f->parts()) {
    if (p.var == Var::kLiteral) {
      literals += f->literal(p);
    } else {
      ++vars;
    }
  }
  EXPECT_EQ(vars, 16);
  EXPECT_EQ(literals, " -  []  \"\"    \"\" \"\"    \"://\"");
  // remote_user, http_host (also $upstream_host's fallback), request, http_referer,
  // http_user_agent: each read once.
  EXPECT_EQ(f->head_vars().size(), 5u);
  EXPECT_GE(f->host_slot(), 0);
  EXPECT_TRUE(f->uses(Var::kTimeLocal));
  EXPECT_FALSE(f->uses(Var::kRequestId));
}

TEST(AccessLogFormat, BracesCaseAndLiterals) {
  auto f = Format::compile("a${Status}b$STATUS$status_", Escape::kDefault);
  // `$status_` is a name of its own (nginx reads name characters greedily): unknown.
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().message(), "unknown \"status_\" variable");
  f = Format::compile("a${Status}b$STATUS-${status}", Escape::kDefault);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  ASSERT_EQ(f->parts().size(), 6u);
  EXPECT_EQ(f->literal(f->parts()[0]), "a");
  EXPECT_EQ(f->parts()[1].var, Var::kStatus);
  EXPECT_EQ(f->literal(f->parts()[2]), "b");
  EXPECT_EQ(f->parts()[3].var, Var::kStatus);
  EXPECT_EQ(f->literal(f->parts()[4]), "-");
  EXPECT_EQ(f->parts()[5].var, Var::kStatus);
}

TEST(AccessLogFormat, KnowsEveryDocumentedVariable) {
  for (const char* name : {"remote_addr",
                           "remote_user",
                           "remote_port",
                           "time_local",
                           "time_iso8601",
                           "msec",
                           "request",
                           "status",
                           "body_bytes_sent",
                           "bytes_sent",
                           "request_length",
                           "request_time",
                           "upstream_addr",
                           "upstream_status",
                           "upstream_response_time",
                           "upstream_connect_time",
                           "upstream_header_time",
                           "upstream_scheme",
                           "upstream_host",
                           "upstream_uri",
                           "http_referer",
                           "http_user_agent",
                           "http_x_forwarded_for",
                           "http_host",
                           "arg_page",
                           "cookie_session",
                           "uri",
                           "document_uri",
                           "request_uri",
                           "args",
                           "query_string",
                           "is_args",
                           "host",
                           "request_method",
                           "scheme",
                           "https",
                           "server_addr",
                           "server_port",
                           "server_protocol",
                           "request_id",
                           "route_id",
                           "route_name",
                           "service_id",
                           "service_name",
                           "consumer_name",
                           "ssl_protocol",
                           "ssl_cipher",
                           "ssl_server_name",
                           "ssl_session_reused",
                           "ssl_client_verify",
                           "ssl_client_s_dn",
                           "ssl_client_i_dn",
                           "ssl_client_serial",
                           "content_length",
                           "content_type",
                           "hostname",
                           "pid"}) {
    SCOPED_TRACE(name);
    auto f = Format::compile(std::string("$") + name, Escape::kDefault);
    EXPECT_TRUE(f.is_ok()) << f.status().message();
  }
}

struct Refusal {
  const char* format;
  const char* error;
};

TEST(AccessLogFormat, RefusesWithNginxWords) {
  const Refusal kCases[] = {
      {"$foo", "unknown \"foo\" variable"},
      {"x $Bar_Baz y", "unknown \"Bar_Baz\" variable"},
      {"$http_", "unknown \"http_\" variable"},
      {"$post_arg_name", "unknown \"post_arg_name\" variable"},
      {"$proxy_add_x_forwarded_for", "unknown \"proxy_add_x_forwarded_for\" variable"},
      {"cost $", "invalid variable name at offset 5"},
      {"$-", "invalid variable name at offset 0"},
      {"${}", "invalid variable name at offset 0"},
      {"${status", "the closing bracket in \"status\" variable is missing"},
      {"${status x}", "the closing bracket in \"status\" variable is missing"},
      {"$sent_http_content_type",
       "\"sent_http_content_type\": response header variables are not available in the access "
       "log (the response head is not kept until the line is written)"},
      {"$upstream_http_server",
       "\"upstream_http_server\": response header variables are not available in the access log "
       "(the response head is not kept until the line is written)"},
  };
  for (const Refusal& c : kCases) {
    SCOPED_TRACE(c.format);
    auto f = Format::compile(c.format, Escape::kDefault);
    ASSERT_FALSE(f.is_ok());
    EXPECT_EQ(f.status().message(), c.error);
  }
}

TEST(AccessLogFormat, Escapes) {
  Escape e = Escape::kNone;
  EXPECT_TRUE(parse_escape("default", &e));
  EXPECT_EQ(e, Escape::kDefault);
  EXPECT_TRUE(parse_escape("json", &e));
  EXPECT_EQ(e, Escape::kJson);
  EXPECT_TRUE(parse_escape("none", &e));
  EXPECT_EQ(e, Escape::kNone);
  EXPECT_FALSE(parse_escape("JSON", &e));
  EXPECT_FALSE(parse_escape("", &e));
}

}  // namespace
}  // namespace sluice::accesslog
