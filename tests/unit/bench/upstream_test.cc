#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "bench/clock.h"
#include "bench/upstream_options.h"
#include "bench/upstream_server.h"
#include "bench_test_client.h"

namespace sluice::bench {
namespace {

constexpr std::string_view kOk =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\n";
constexpr std::string_view kOkClose =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nConnection: "
    "close\r\n\r\n";
constexpr std::string_view kHello = "hello world\n";

std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) {
    s += p;
  }
  return s;
}

// Sends `request` in one write (or byte by byte) and returns everything until the close.
std::string exchange(uint16_t port, std::string_view request, bool byte_by_byte = false,
                     bool* closed = nullptr) {
  int fd = connect_to(port);
  if (byte_by_byte) {
    for (char c : request) {
      send_all(fd, std::string_view(&c, 1));
    }
  } else {
    send_all(fd, request);
  }
  std::string got = read_until_close(fd, closed);
  close(fd);
  return got;
}

TEST(UpstreamTest, AnswersPipelinedRequestsInOrder) {
  auto up = start_upstream();
  ASSERT_TRUE(up);
  // The HEAD in the middle gets no body, so the order of the replies is visible.
  std::string req =
      "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
      "HEAD /b HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  bool closed = false;
  EXPECT_EQ(exchange(up->port(), req, false, &closed), cat({kOk, kHello, kOk, kOkClose, kHello}));
  EXPECT_TRUE(closed);
}

TEST(UpstreamTest, ConsumesChunkedAndLengthBodies) {
  auto up = start_upstream();
  ASSERT_TRUE(up);
  std::string req =
      "POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: t\r\n\r\n"
      "PUT /v HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz"
      "GET /w HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::string want = cat({kOk, kHello, kOk, kHello, kOkClose, kHello});
  EXPECT_EQ(exchange(up->port(), req), want);
  EXPECT_EQ(exchange(up->port(), req, /*byte_by_byte=*/true), want);
}

TEST(UpstreamTest, GarbageGets400AndClose) {
  auto up = start_upstream();
  ASSERT_TRUE(up);
  for (std::string_view bad : {"garbage\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n",
                               "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                               "zz\r\n"}) {
    bool closed = false;
    std::string got = exchange(up->port(), bad, false, &closed);
    EXPECT_TRUE(got.starts_with("HTTP/1.1 400 Bad Request\r\n")) << got;
    EXPECT_TRUE(got.ends_with("Connection: close\r\n\r\nbad request\n")) << got;
    EXPECT_TRUE(closed) << bad;
  }
}

TEST(UpstreamTest, KeepsAliveAcrossRequestsAndHonoursHttp10) {
  auto up = start_upstream(0, "ok");
  ASSERT_TRUE(up);
  int fd = connect_to(up->port());
  std::string one = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";
  for (int i = 0; i < 3; ++i) {
    send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(read_at_least(fd, one.size()), one);
  }
  send_all(fd, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  std::string ka10 =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
      "Connection: keep-alive\r\n\r\nok";
  EXPECT_EQ(read_at_least(fd, ka10.size()), ka10);
  send_all(fd, "GET / HTTP/1.0\r\n\r\n");  // HTTP/1.0 without keep-alive: closes
  bool closed = false;
  EXPECT_EQ(read_until_close(fd, &closed),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
            "Connection: close\r\n\r\nok");
  EXPECT_TRUE(closed);
  close(fd);
}

TEST(UpstreamTest, SendsContinueBeforeReadingTheBody) {
  auto up = start_upstream();
  ASSERT_TRUE(up);
  int fd = connect_to(up->port());
  send_all(fd, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
  EXPECT_EQ(read_at_least(fd, cont.size()), cont);
  send_all(fd, "body");
  std::string want = cat({kOk, kHello});
  EXPECT_EQ(read_at_least(fd, want.size()), want);
  close(fd);
}

TEST(UpstreamTest, ServiceTimeDelaysEachReplyInFifoOrder) {
  auto up = start_upstream(/*service_us=*/20'000);
  ASSERT_TRUE(up);
  int fd = connect_to(up->port());
  uint64_t t0 = now_ns();
  send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string first = read_at_least(fd, kOk.size() + kHello.size());
  uint64_t t1 = now_ns();
  std::string second = read_at_least(fd, 2 * (kOk.size() + kHello.size()) - first.size());
  uint64_t t2 = now_ns();
  EXPECT_EQ(first + second, cat({kOk, kHello, kOk, kHello}));
  EXPECT_GE(t1 - t0, 20'000'000u);  // served one at a time: 20 ms, then 40 ms
  EXPECT_GE(t2 - t0, 40'000'000u);
  close(fd);
}

TEST(ServiceClockTest, QueuesBehindThePreviousCompletion) {
  ServiceClock clock(1'000);
  EXPECT_EQ(clock.complete_at(0), 1'000u);
  EXPECT_EQ(clock.complete_at(0), 2'000u);
  EXPECT_EQ(clock.complete_at(500), 3'000u);
  EXPECT_EQ(clock.complete_at(10'000), 11'000u);  // idle server: arrival + service
}

TEST(UpstreamTest, StopIsIdempotentAndClosesClients) {
  auto up = start_upstream();
  ASSERT_TRUE(up);
  int fd = connect_to(up->port());
  send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");  // so the connection is surely accepted
  EXPECT_EQ(read_at_least(fd, kOk.size() + kHello.size()), cat({kOk, kHello}));
  up->stop();
  up->stop();
  bool closed = false;
  read_until_close(fd, &closed);
  EXPECT_TRUE(closed);
  close(fd);
}

}  // namespace
}  // namespace sluice::bench
