#include "plugins/loggers/conf.h"

#include <gtest/gtest.h>

#include "plugins/loggers/capture.h"
#include "plugins/loggers/format.h"
#include "plugins/loggers/http_sink.h"
#include "plugins/loggers/sinks.h"

namespace sluice::plugins::loggers {
namespace {

using plugin::Json;

struct Case {
  Kind kind;
  const char* conf;
  const char* error;  // "" when accepted
};

TEST(LoggerConf, TableOfErrors) {
  const Case cases[] = {
      {Kind::kHttp, R"({})", R"(property "uri" is required)"},
      {Kind::kHttp, R"({"uri": 1})",
       R"(property "uri" validation failed: wrong type: expected string, got number)"},
      {Kind::kHttp, R"({"uri": "http://127.0.0.1:9/x", "batch_max_size": 0})",
       R"(property "batch_max_size" validation failed: expected 0 to be at least 1)"},
      {Kind::kHttp, R"({"uri": "http://127.0.0.1:9/x", "inactive_timeout": 0})",
       R"(property "inactive_timeout" validation failed: expected 0 to be at least 1)"},
      {Kind::kHttp, R"({"uri": "http://127.0.0.1:9/x", "max_retry_count": -1})",
       R"(property "max_retry_count" validation failed: expected -1 to be at least 0)"},
      {Kind::kHttp, R"({"uri": "http://127.0.0.1:9/x", "concat_method": "x"})",
       R"(property "concat_method" validation failed: matches none of the enum values)"},
      {Kind::kHttp, R"({"uri": "http://127.0.0.1:99999/x"})",
       R"(property "uri" validation failed: port 99999 is out of range)"},
      {Kind::kHttp, R"({"uri": "http://127.0.0.1:9/x", "log_format": {"a": 1}})",
       R"(log_format: the value of "a" is not a string or an object)"},
      {Kind::kHttp, R"({"uri": "http://127.0.0.1:9/x", "log_format": {"a": "$post_arg_x"}})",
       "log_format: variable \"$post_arg_x\""},
      {Kind::kHttp,
       R"({"uri": "http://127.0.0.1:9/x", "log_format": {"a":{"b":{"c":{"d":{"e":{"f":"x"}}}}}}})",
       R"(log_format: "e" nests objects deeper than 5 levels)"},
      {Kind::kHttp, R"({"uri": "https://[::1]:8443/x?y=1", "ssl_verify": true})", ""},
      {Kind::kTcp, R"({"host": "127.0.0.1"})", R"(property "port" is required)"},
      {Kind::kTcp, R"({"host": "127.0.0.1", "port": 0})",
       R"(property "port" validation failed: 0 is not a port Sluice can send to (1-65535))"},
      {Kind::kTcp, R"({"host": "127.0.0.1", "port": 5044, "tls": false, "batch_max_size": 1,
                       "name": "tcp logger"})",
       ""},
      {Kind::kUdp, R"({"port": 1})", R"(property "host" is required)"},
      {Kind::kSyslog, R"({"host": "h", "port": 1, "sock_type": "udp", "tls": true})",
       R"(tls needs sock_type "tcp": syslog over UDP has no TLS)"},
      {Kind::kSyslog, R"({"host": "h", "port": 1, "pool_size": 4})",
       R"(property "pool_size" validation failed: expected 4 to be at least 5)"},
      {Kind::kSyslog, R"({"host": "h", "port": 1, "drop_limit": 0})",
       R"(property "drop_limit" validation failed: 0 bytes can hold no entry)"},
      {Kind::kSyslog, R"({"host": "127.0.0.1", "port": 5044, "flush_limit": 1})", ""},
      {Kind::kFile, R"({})", R"(property "path" is required)"},
      {Kind::kFile, R"({"path": "logs/file.log", "match": [["arg_x", "==", "1"]]})",
       "match is not supported by Sluice's file-logger"},
  };
  for (const Case& c : cases) {
    common::Status s = check(c.kind, Json::parse(c.conf), plugin::PluginUse::kHttp);
    if (*c.error == 0) {
      EXPECT_TRUE(s.is_ok()) << c.conf << ": " << s.message();
    } else {
      EXPECT_FALSE(s.is_ok()) << c.conf;
      EXPECT_TRUE(s.message().starts_with(c.error)) << c.conf << ": " << s.message();
    }
  }
}

TEST(LoggerConf, Defaults) {
  auto c = parse(Kind::kHttp, Json::parse(R"({"uri": "https://example.com"})"));
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->batch.name, "http logger");
  EXPECT_EQ(c->batch.batch_max_size, 1000u);
  EXPECT_EQ(c->batch.inactive_timeout_ms, 5000u);
  EXPECT_EQ(c->batch.buffer_duration_ms, 60000u);
  EXPECT_EQ(c->batch.retry_delay_ms, 1000u);
  EXPECT_EQ(c->batch.max_retry_count, 0u);
  EXPECT_EQ(c->timeout_ms, 3000u);
  EXPECT_EQ(c->uri.port, 443);
  EXPECT_EQ(c->uri.path, "/");
  EXPECT_EQ(c->uri.host_header, "example.com");
  auto t = parse(Kind::kTcp, Json::parse(R"({"host": "h", "port": 1})"));
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->timeout_ms, 1000u);  // tcp-logger's timeout is in milliseconds
  auto u = parse(Kind::kUdp, Json::parse(R"({"host": "h", "port": 1, "timeout": 2})"));
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(u->timeout_ms, 2000u);  // udp-logger's in seconds
  auto s = parse(Kind::kSyslog, Json::parse(R"({"host": "h", "port": 1})"));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->batch.name, "sys logger");
  EXPECT_EQ(s->batch.max_pending_bytes, 1048576u);
  EXPECT_FALSE(s->udp);
}

TEST(LoggerConf, Metadata) {
  EXPECT_TRUE(check(Kind::kHttp, Json::parse(R"({"log_format": {"host": "$host"}})"),
                    plugin::PluginUse::kMetadata)
                  .is_ok());
  common::Status s = check(Kind::kHttp, Json::parse(R"({"log_format": {"a": "$nope"}})"),
                           plugin::PluginUse::kMetadata);
  EXPECT_EQ(s.message(), R"(log_format: unknown variable "$nope")");
  s = check(Kind::kHttp, Json::parse(R"({"max_pending_entries": 0})"),
            plugin::PluginUse::kMetadata);
  EXPECT_EQ(s.message(),
            R"(property "max_pending_entries" validation failed: expected 0 to be at least 1)");
  auto m = parse_metadata(Json::parse(R"({"max_pending_entries": 7})"));
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(m->max_pending, 7u);
}

TEST(LoggerSinks, JoinEntries) {
  std::vector<std::string> e = {R"({"a":1})", R"({"b":2})"};
  auto joined = [](std::span<const std::string> es, bool single, bool new_line) {
    std::string out = "x";  // appended to what is there
    join_entries(es, single, new_line, &out);
    EXPECT_EQ(out.size() - 1, joined_size(es, single, new_line));
    return out.substr(1);
  };
  EXPECT_EQ(joined(std::span(e).first(1), true, false), R"({"a":1})");
  EXPECT_EQ(joined(std::span(e).first(1), false, false), R"([{"a":1}])");
  EXPECT_EQ(joined(e, false, false), R"([{"a":1},{"b":2}])");
  EXPECT_EQ(joined(e, false, true), "{\"a\":1}\n{\"b\":2}");
  EXPECT_EQ(joined(std::span(e).first(0), false, false), "[]");
}

TEST(LoggerSinks, ResponseHead) {
  auto f = parse_response_head("HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\n");
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(f->status, 500);
  EXPECT_EQ(f->content_length, 4);
  EXPECT_FALSE(f->close);
  f = parse_response_head(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  ASSERT_TRUE(f.is_ok());
  EXPECT_TRUE(f->chunked);
  EXPECT_TRUE(f->close);
  f = parse_response_head("HTTP/1.0 204 No\r\n\r\n");
  ASSERT_TRUE(f.is_ok());
  EXPECT_TRUE(f->close);
  EXPECT_FALSE(parse_response_head("SSH-2.0\r\n\r\n").is_ok());
  EXPECT_FALSE(parse_response_head("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_ok());
}

TEST(LoggerFormat, RendersLiteralsLogVarsAndNesting) {
  auto f = LogFormat::compile(Json::parse(
      R"({"lit": "x", "s": "$status", "r": {"route": "$route_id", "c": "$consumer_name"}})"));
  ASSERT_TRUE(f.is_ok());
  plugin::Context ctx;
  ctx.status = 201;
  ctx.route_id = "7";
  LogInput in;
  in.ctx = &ctx;
  std::string out;
  render_format(*f, in, &out);
  // A variable that is not there (no consumer) is left out, as APISIX's nil.
  EXPECT_EQ(out, R"("lit":"x","r":{"route":"7"},"s":"201")");  // keys in nlohmann's order
}

}  // namespace
}  // namespace sluice::plugins::loggers
