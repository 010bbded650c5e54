// write_response_head: the status line, fields in order, the framing field and the
// connection verdict, byte for byte.

#include "codec/h1/head_writer.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::h1 {
namespace {

using Conn = ResponseHeadOut::Connection;

TEST(HeadWriter, Table) {
  const http::Header up[] = {{"Server", "upstream/1"}, {"X-Up", "1"}};
  const http::Header gw[] = {{"X-APISIX-Upstream-Status", "502"}};
  struct Case {
    const char* name;
    ResponseHeadOut in;
    const char* want;
  };
  const Case cases[] = {
      {"length, kept alive",
       {.status = 200, .reason = "OK", .upstream = up, .content_length = 5},
       "HTTP/1.1 200 OK\r\nServer: upstream/1\r\nX-Up: 1\r\nContent-Length: 5\r\n\r\n"},
      {"chunks, closing, the gateway's Server after the upstream's fields",
       {.status = 200,
        .reason = "OK",
        .upstream = up,
        .skip_name = "server",
        .middle_lines = "Server: sluice\r\n",
        .fields = gw,
        .chunked = true,
        .connection = Conn::kClose},
       "HTTP/1.1 200 OK\r\nX-Up: 1\r\nServer: sluice\r\nX-APISIX-Upstream-Status: 502\r\n"
       "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"},
      {"a gateway answer to an HTTP/1.0 client kept alive",
       {.status = 404,
        .reason = "Not Found",
        .first_lines = "Server: sluice\r\n",
        .fields = gw,
        .content_length = 0,
        .connection = Conn::kKeepAlive},
       "HTTP/1.1 404 Not Found\r\nServer: sluice\r\nX-APISIX-Upstream-Status: 502\r\n"
       "Content-Length: 0\r\nConnection: keep-alive\r\n\r\n"},
      {"bodiless: neither length nor chunks",
       {.status = 204, .reason = "No Content"},
       "HTTP/1.1 204 No Content\r\n\r\n"},
      {"a 101: the protocol and Connection: upgrade instead of a verdict",
       {.status = 101,
        .reason = "Switching Protocols",
        .upstream = up,
        .connection = Conn::kClose,
        .upgrade = "websocket"},
       "HTTP/1.1 101 Switching Protocols\r\nServer: upstream/1\r\nX-Up: 1\r\n"
       "Upgrade: websocket\r\nConnection: upgrade\r\n\r\n"},
  };
  for (const Case& c : cases) {
    std::string out = "stale";
    write_response_head(&out, c.in);
    EXPECT_EQ(out, c.want) << c.name;
  }
}

}  // namespace
}  // namespace sluice::h1
