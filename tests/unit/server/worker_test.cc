// A real worker thread serving requests while another thread publishes snapshots: the
// cross-thread paths (EventLoop::post, snapshot swaps, drain) that TSan checks in CI.

#include "server/worker.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "io/socket.h"
#include "unit/server/test_listen.h"

namespace sluice::server {
namespace {

// A blocking keep-alive upstream answering every request head with "ok".
class TinyUpstream {
 public:
  TinyUpstream() {
    fd_ = listen_any(&port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~TinyUpstream() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  void serve() {
    while (!stop_) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EAGAIN) {
          usleep(1000);
          continue;
        }
        return;
      }
      std::thread([c] {
        std::string buf;
        char tmp[4096];
        while (true) {
          ssize_t n = recv(c, tmp, sizeof(tmp), 0);
          if (n <= 0) {
            break;
          }
          buf.append(tmp, static_cast<size_t>(n));
          size_t end;
          while ((end = buf.find("\r\n\r\n")) != std::string::npos) {
            buf.erase(0, end + 4);
            static const char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            send(c, kOk, sizeof(kOk) - 1, MSG_NOSIGNAL);
          }
        }
        close(c);
      }).detach();
    }
  }
  int fd_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

snapshot::SnapshotPtr make_snapshot(uint16_t up_port, uint64_t version) {
  auto snap = std::make_shared<snapshot::Snapshot>();
  snap->version = version;
  auto up = std::make_unique<upstream::Upstream>();
  upstream::Node node;
  node.host = node.ip = "127.0.0.1";
  node.port = up_port;
  node.resolved = io::make_sockaddr("127.0.0.1", up_port, &node.addr);
  node.addr_key = "127.0.0.1:" + std::to_string(up_port);
  up->nodes.push_back(node);
  up->any_resolved = node.resolved;
  snapshot::Route r;
  r.id = "1";
  r.target = snapshot::RouteTarget::kUpstream;
  r.upstream = up.get();
  snap->upstreams.push_back(std::move(up));
  snap->routes.push_back(r);
  router::RouteSpec spec;
  spec.uris = {"/*"};
  std::vector<router::RouteSpec> specs;
  specs.push_back(std::move(spec));
  snap->table = std::move(router::RouteTable::build(std::move(specs)).value());
  return snap;
}

TEST(WorkerTest, ServesWhileSnapshotsArePublishedFromAnotherThread) {
  TinyUpstream upstream;
  auto settings = std::make_shared<Settings>();
  auto limits = std::make_shared<ConnLimits>(0);
  Worker worker(0, settings, limits);
  uint16_t port = 0;
  worker.add_listener(listen_any(&port), nullptr);
  worker.publish(make_snapshot(upstream.port(), 1));
  std::thread loop([&] { worker.run(); });

  std::atomic<bool> done{false};
  std::thread publisher([&] {
    for (uint64_t v = 2; !done; ++v) {
      worker.publish(make_snapshot(upstream.port(), v));
      usleep(200);
    }
  });

  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  io::SockAddr a;
  ASSERT_TRUE(io::make_sockaddr("127.0.0.1", port, &a));
  ASSERT_EQ(connect(c, a.get(), a.len), 0);
  int ok = 0;
  std::string buf;
  for (int i = 0; i < 300; ++i) {
    static const char kReq[] = "GET /x HTTP/1.1\r\nHost: t\r\n\r\n";
    ASSERT_EQ(send(c, kReq, sizeof(kReq) - 1, MSG_NOSIGNAL), ssize_t(sizeof(kReq) - 1));
    // Read one response: head plus the 2-byte body.
    while (true) {
      size_t end = buf.find("\r\n\r\n");
      if (end != std::string::npos && buf.size() >= end + 4 + 2) {
        ok += buf.compare(0, 12, "HTTP/1.1 200") == 0;
        buf.erase(0, end + 4 + 2);
        break;
      }
      char tmp[4096];
      ssize_t n = recv(c, tmp, sizeof(tmp), 0);
      ASSERT_GT(n, 0) << "connection closed after " << i << " responses";
      buf.append(tmp, static_cast<size_t>(n));
    }
  }
  close(c);
  done = true;
  publisher.join();
  worker.drain(2000);
  loop.join();
  EXPECT_EQ(ok, 300);
}

}  // namespace
}  // namespace sluice::server
