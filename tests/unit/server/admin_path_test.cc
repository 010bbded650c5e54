// The worker side of the Admin API: a real Worker on a loopback listener, a fake AdminHandler
// standing in for the control thread, and plain blocking sockets as the client. Checks what
// reaches the handler (body whole, de-chunked, headers lower-cased, query split) and what the
// client reads back (100 Continue, 413, pipelined order, HEAD, keep-alive), and that answers
// for connections that died are dropped safely (run under ASan too).

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "io/socket.h"
#include "server/admin_hook.h"
#include "server/worker.h"
#include "unit/server/test_listen.h"

namespace sluice::server {
namespace {

using namespace std::chrono_literals;

// Polls `done` for up to 5 s.
bool eventually(const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// The control thread's stand-in: records every request, then answers at once (on the worker
// thread, inside submit), from its own thread after a delay, or never (keeping `reply`).
// Thread: any
class FakeAdmin : public AdminHandler {
 public:
  enum class Mode { kImmediate, kDelayed, kNever };
  explicit FakeAdmin(Mode mode) : mode_(mode) {}
  ~FakeAdmin() override { join(); }

  // Set before the worker starts; runs on the worker thread.
  std::function<AdminResponse(const AdminRequest&)> respond = [](const AdminRequest& r) {
    AdminResponse a;
    a.body = "{\"path\":\"" + r.path + "\",\"len\":" + std::to_string(r.body.size()) + "}";
    a.headers.emplace_back("X-API-VERSION", "v3");
    return a;
  };

  void submit(AdminRequest req, std::function<void(AdminResponse)> reply) override {
    AdminResponse resp = respond(req);
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(std::move(req));
      replied_before_.push_back(replied_.load());
    }
    switch (mode_) {
      case Mode::kImmediate:
        ++replied_;
        reply(std::move(resp));
        break;
      case Mode::kDelayed: {
        std::lock_guard<std::mutex> lock(mu_);
        threads_.emplace_back([this, reply = std::move(reply), resp = std::move(resp)]() mutable {
          std::this_thread::sleep_for(delay);
          ++replied_;  // counted first: the worker may submit the next request at once
          reply(std::move(resp));
        });
        break;
      }
      case Mode::kNever: {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.push_back(std::move(reply));
        break;
      }
    }
  }

  // Answers every kept `reply` now, from the calling thread.
  void reply_pending() {
    std::vector<std::function<void(AdminResponse)>> p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      p.swap(pending_);
    }
    for (auto& r : p) {
      AdminResponse a;
      a.body = "{\"late\":true}";
      ++replied_;
      r(std::move(a));
    }
  }
  void join() {
    std::vector<std::thread> t;
    {
      std::lock_guard<std::mutex> lock(mu_);
      t.swap(threads_);
    }
    for (auto& th : t) {
      th.join();
    }
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }
  AdminRequest request(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.at(i);
  }
  // How many answers had been started when request `i` was submitted.
  int replied_before(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return replied_before_.at(i);
  }
  int replied() const { return replied_.load(); }

  std::chrono::milliseconds delay{20};

 private:
  Mode mode_;
  std::mutex mu_;
  std::vector<AdminRequest> requests_;
  std::vector<int> replied_before_;
  std::vector<std::thread> threads_;
  std::vector<std::function<void(AdminResponse)>> pending_;
  std::atomic<int> replied_{0};
};

// One Worker on its own thread with one listener.
class TestGateway {
 public:
  TestGateway(std::shared_ptr<FakeAdmin> admin, ListenerKind kind, bool admin_in_settings = true,
              uint32_t reply_timeout_ms = 60000)
      : admin_(std::move(admin)) {
    auto settings = std::make_shared<Settings>();
    if (admin_in_settings) {
      settings->admin = admin_;
    }
    settings->admin_reply_timeout_ms = reply_timeout_ms;
    settings->linger_ms = 500;
    worker_ = std::make_unique<Worker>(0, settings, std::make_shared<ConnLimits>(0));
    worker_->add_listener(listen_any(&port_), nullptr, kind);
    loop_ = std::thread([this] { worker_->run(); });
  }
  // The contract of admin_hook.h: the loop ends, the handler stops replying, then the worker
  // is destroyed.
  ~TestGateway() {
    stop();
    admin_->join();
    worker_.reset();
  }
  void stop() {
    if (loop_.joinable()) {
      worker_->drain(200);
      loop_.join();
    }
  }
  uint16_t port() const { return port_; }

 private:
  std::shared_ptr<FakeAdmin> admin_;
  std::unique_ptr<Worker> worker_;
  std::thread loop_;
  uint16_t port_ = 0;
};

struct Response {
  int status = 0;
  std::string head;
  std::string body;
  std::optional<std::string> header(std::string_view name) const {
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos + 2 < head.size()) {
      size_t end = head.find("\r\n", pos + 2);
      std::string line = head.substr(pos + 2, end - pos - 2);
      size_t colon = line.find(':');
      if (colon == name.size() && http::iequals(std::string_view(line).substr(0, colon), name)) {
        size_t v = line.find_first_not_of(' ', colon + 1);
        return v == std::string::npos ? "" : line.substr(v);
      }
      pos = end;
    }
    return std::nullopt;
  }
};

// A blocking client with 5 s timeouts, so a broken server fails a test instead of hanging it.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    io::SockAddr a;
    io::make_sockaddr("127.0.0.1", port, &a);
    connected_ = connect(fd_, a.get(), a.len) == 0;
  }
  ~Client() { close(); }
  bool connected() const { return connected_; }
  // False when the server no longer takes bytes (it answered and closed).
  bool send(std::string_view s) {
    while (!s.empty()) {
      ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        return false;
      }
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads one response; status 0 when the connection ended or timed out first.
  Response read(bool head_request = false) {
    Response r;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) {
        return r;
      }
    }
    r.head = buf_.substr(0, end + 4);
    buf_.erase(0, end + 4);
    r.status = std::stoi(r.head.substr(9, 3));
    size_t len = 0;
    if (auto cl = r.header("Content-Length")) {
      len = std::stoul(*cl);
    }
    if (head_request || r.status < 200 || r.status == 204 || r.status == 304) {
      len = 0;
    }
    while (buf_.size() < len) {
      if (!fill()) {
        r.status = 0;
        return r;
      }
    }
    r.body = buf_.substr(0, len);
    buf_.erase(0, len);
    return r;
  }
  // True when the server closes the connection with no further bytes.
  bool closed_by_server() {
    while (fill()) {
    }
    return buf_.empty() && last_recv_ == 0;
  }
  // Bytes already received past the last response.
  const std::string& leftover() const { return buf_; }
  void close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  // Closes with a reset (SO_LINGER 0), so the server sees an error, not a FIN.
  void reset() {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close();
  }

 private:
  bool fill() {
    char tmp[16384];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    last_recv_ = n;
    if (n <= 0) {
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  ssize_t last_recv_ = 1;
  std::string buf_;
};

std::string body_of(size_t n) {
  std::string s(n, 'x');
  for (size_t i = 0; i < n; ++i) {
    s[i] = static_cast<char>('a' + i % 26);
  }
  return s;
}

std::string chunked(std::string_view body, size_t piece) {
  std::string out;
  char hex[32];
  for (size_t i = 0; i < body.size(); i += piece) {
    std::string_view c = body.substr(i, piece);
    snprintf(hex, sizeof(hex), "%zx;ext=1\r\n", c.size());
    out.append(hex).append(c).append("\r\n");
  }
  return out + "0\r\n\r\n";
}

TEST(AdminPathTest, PutWithContentLengthIsDeliveredWhole) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  ASSERT_TRUE(c.connected());
  std::string body = body_of(5000);
  ASSERT_TRUE(
      c.send("PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n"));
  std::this_thread::sleep_for(10ms);  // the body arrives in a later read
  ASSERT_TRUE(c.send(body.substr(0, 1000)));
  std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(c.send(body.substr(1000)));
  Response r = c.read();
  ASSERT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(r.head.substr(0, 17), "HTTP/1.1 200 OK\r\n");
  EXPECT_EQ(r.body, "{\"path\":\"/apisix/admin/routes/1\",\"len\":5000}");
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  EXPECT_EQ(r.header("X-API-VERSION"), "v3");
  EXPECT_TRUE(r.header("Date").has_value());
  EXPECT_FALSE(r.header("Connection").has_value());
  ASSERT_EQ(admin->count(), 1u);
  AdminRequest q = admin->request(0);
  EXPECT_EQ(q.method, "PUT");
  EXPECT_EQ(q.path, "/apisix/admin/routes/1");
  EXPECT_EQ(q.body, body);
  EXPECT_EQ(q.peer_ip, "127.0.0.1");
  EXPECT_FALSE(q.on_proxy_port);
  // Keep-alive: the connection serves another request.
  ASSERT_TRUE(c.send("GET /apisix/admin/routes HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(c.read().body, "{\"path\":\"/apisix/admin/routes\",\"len\":0}");
}

TEST(AdminPathTest, ChunkedBodyIsDechunked) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  std::string body = body_of(70000);
  std::string wire =
      "POST /apisix/admin/upstreams HTTP/1.1\r\nHost: a\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
      chunked(body, 3000);
  // Split at awkward places: inside a size line, inside data, inside the last chunk.
  ASSERT_TRUE(c.send(wire.substr(0, 60)));
  std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(c.send(wire.substr(60, 40000)));
  std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(c.send(wire.substr(40060, wire.size() - 40060 - 3)));
  std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(c.send(wire.substr(wire.size() - 3)));
  Response r = c.read();
  ASSERT_EQ(r.status, 200) << r.head;
  ASSERT_EQ(admin->count(), 1u);
  EXPECT_EQ(admin->request(0).method, "POST");
  EXPECT_EQ(admin->request(0).body, body);
}

TEST(AdminPathTest, ExpectContinueGets100ThenTheAnswer) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  std::string body = body_of(2000);
  ASSERT_TRUE(
      c.send("PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n"
             "Expect: 100-continue\r\n\r\n"));
  Response interim = c.read();
  ASSERT_EQ(interim.status, 100) << interim.head;
  EXPECT_EQ(interim.head, "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_EQ(admin->count(), 0u);
  ASSERT_TRUE(c.send(body));
  Response r = c.read();
  ASSERT_EQ(r.status, 200) << r.head;
  ASSERT_EQ(admin->count(), 1u);
  EXPECT_EQ(admin->request(0).body, body);
}

TEST(AdminPathTest, ExpectContinueWithTheBodyAlreadySentGetsNo100) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  ASSERT_TRUE(
      c.send("PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
             "Expect: 100-continue\r\n\r\n{}"));
  Response r = c.read();
  EXPECT_EQ(r.status, 200) << r.head;
}

TEST(AdminPathTest, ContentLengthOverTheCapGets413WithoutReadingOrSubmitting) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  // Only the head is sent: the answer must not wait for the body.
  ASSERT_TRUE(c.send("PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\nContent-Length: " +
                     std::to_string(kAdminMaxBody + 1) + "\r\nExpect: 100-continue\r\n\r\n"));
  Response r = c.read();
  ASSERT_EQ(r.status, 413) << r.head;
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_EQ(r.body, "{\"error_msg\":\"413 Request Entity Too Large\"}\n");
  EXPECT_TRUE(c.closed_by_server());
  EXPECT_EQ(admin->count(), 0u);
}

TEST(AdminPathTest, ContentLengthAtTheCapIsAccepted) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kImmediate);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  std::string body = body_of(kAdminMaxBody);
  ASSERT_TRUE(c.send("PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body));
  Response r = c.read();
  ASSERT_EQ(r.status, 200) << r.head;
  ASSERT_EQ(admin->count(), 1u);
  EXPECT_EQ(admin->request(0).body.size(), kAdminMaxBody);
}

TEST(AdminPathTest, ChunkedOverTheCapGets413) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  std::string wire =
      "PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
      chunked(body_of(kAdminMaxBody + 10), 65536);
  c.send(wire);  // the server may stop taking bytes once it has answered
  Response r = c.read();
  ASSERT_EQ(r.status, 413) << r.head;
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(c.closed_by_server());
  EXPECT_EQ(admin->count(), 0u);
}

TEST(AdminPathTest, BadChunkedFramingGets400) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  ASSERT_TRUE(
      c.send("PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
             "zz\r\n"));
  Response r = c.read();
  EXPECT_EQ(r.status, 400) << r.head;
  EXPECT_TRUE(c.closed_by_server());
  EXPECT_EQ(admin->count(), 0u);
}

TEST(AdminPathTest, HeadersAreLowerCasedAndTheQueryIsSplit) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kImmediate);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  ASSERT_TRUE(
      c.send("GET /apisix/admin/routes?page=2&page_size=10 HTTP/1.1\r\nHost: a:9180\r\n"
             "X-API-KEY: EdCz\r\nContent-Type: Application/JSON\r\nX-Api-Key: second\r\n\r\n"));
  ASSERT_EQ(c.read().status, 200);
  ASSERT_EQ(admin->count(), 1u);
  AdminRequest q = admin->request(0);
  EXPECT_EQ(q.method, "GET");
  EXPECT_EQ(q.path, "/apisix/admin/routes");
  EXPECT_EQ(q.query, "page=2&page_size=10");
  using H = std::pair<std::string, std::string>;
  std::vector<H> want = {{"host", "a:9180"},
                         {"x-api-key", "EdCz"},
                         {"content-type", "Application/JSON"},
                         {"x-api-key", "second"}};
  EXPECT_EQ(q.headers, want);
  EXPECT_TRUE(q.body.empty());
}

TEST(AdminPathTest, PipelinedRequestsAreSubmittedOneAtATimeAndAnsweredInOrder) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  admin->delay = 50ms;
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  ASSERT_TRUE(
      c.send("PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
             "GET /apisix/admin/routes/2 HTTP/1.1\r\nHost: a\r\n\r\n"
             "DELETE /apisix/admin/routes/3 HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(c.read().body, "{\"path\":\"/apisix/admin/routes/1\",\"len\":3}");
  EXPECT_EQ(c.read().body, "{\"path\":\"/apisix/admin/routes/2\",\"len\":0}");
  EXPECT_EQ(c.read().body, "{\"path\":\"/apisix/admin/routes/3\",\"len\":0}");
  ASSERT_EQ(admin->count(), 3u);
  EXPECT_EQ(admin->request(2).method, "DELETE");
  // Nothing was read past a request until its answer came back.
  EXPECT_EQ(admin->replied_before(0), 0);
  EXPECT_EQ(admin->replied_before(1), 1);
  EXPECT_EQ(admin->replied_before(2), 2);
}

TEST(AdminPathTest, HeadGetsTheLengthButNoBody) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  ASSERT_TRUE(c.send("HEAD /apisix/admin/routes HTTP/1.1\r\nHost: a\r\n\r\n"));
  Response r = c.read(/*head_request=*/true);
  ASSERT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(r.header("Content-Length"), "39");
  ASSERT_TRUE(c.send("GET /apisix/admin/x HTTP/1.1\r\nHost: a\r\n\r\n"));
  // Had a body followed the HEAD answer, this would read it as the next status line.
  Response next = c.read();
  EXPECT_EQ(next.status, 200) << next.head;
  EXPECT_EQ(next.body, "{\"path\":\"/apisix/admin/x\",\"len\":0}");
}

TEST(AdminPathTest, StatusHeadersAndKeepAliveFollowLocalReplyRules) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kImmediate);
  admin->respond = [](const AdminRequest& r) {
    AdminResponse a;
    a.status = r.method == "POST" ? 201 : r.method == "PATCH" ? 405 : 409;
    a.body = "plain";
    a.headers = {{"Content-Type", "text/plain"},
                 {"Content-Length", "999"},  // framing is the worker's: dropped
                 {"Connection", "close"},
                 {"X-Bad", "a\r\nInjected: 1"},
                 {"X-API-VERSION", "v3"}};
    return a;
  };
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  ASSERT_TRUE(c.send("POST /apisix/admin/routes HTTP/1.1\r\nHost: a\r\n\r\n"));
  Response r = c.read();
  EXPECT_EQ(r.head.substr(0, 22), "HTTP/1.1 201 Created\r\n");
  EXPECT_EQ(r.header("Content-Type"), "text/plain");
  EXPECT_EQ(r.header("Content-Length"), "5");
  EXPECT_FALSE(r.header("Connection").has_value());
  EXPECT_FALSE(r.header("X-Bad").has_value());
  EXPECT_FALSE(r.header("Injected").has_value());
  EXPECT_EQ(r.header("X-API-VERSION"), "v3");
  EXPECT_EQ(r.body, "plain");
  // HTTP/1.0 with keep-alive stays open and says so.
  ASSERT_TRUE(c.send("PATCH /apisix/admin/routes/1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  r = c.read();
  EXPECT_EQ(r.head.substr(0, 26), "HTTP/1.1 405 Not Allowed\r\n");
  EXPECT_EQ(r.header("Connection"), "keep-alive");
  // Asked to close: answered, then closed.
  ASSERT_TRUE(
      c.send("PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
  r = c.read();
  EXPECT_EQ(r.head.substr(0, 23), "HTTP/1.1 409 Conflict\r\n");
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(c.closed_by_server());
}

TEST(AdminPathTest, NoContentAnswerHasNeitherLengthNorBody) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kImmediate);
  admin->respond = [](const AdminRequest& r) {
    AdminResponse a;
    a.status = r.method == "OPTIONS" ? 204 : 200;
    a.body = "{}";
    return a;
  };
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  ASSERT_TRUE(
      c.send("OPTIONS /apisix/admin/routes HTTP/1.1\r\nHost: a\r\n\r\n"
             "GET /apisix/admin/routes HTTP/1.1\r\nHost: a\r\n\r\n"));
  Response r = c.read();
  EXPECT_EQ(r.head.substr(0, 25), "HTTP/1.1 204 No Content\r\n");
  EXPECT_FALSE(r.header("Content-Length").has_value());
  r = c.read();
  EXPECT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(r.body, "{}");
}

TEST(AdminPathTest, ClientGoneBeforeTheAnswerIsSafe) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kDelayed);
  admin->delay = 100ms;
  TestGateway gw(admin, ListenerKind::kAdmin);
  {
    Client fin(gw.port());  // closes with a FIN: the answer goes out to a dead socket
    ASSERT_TRUE(fin.send("GET /apisix/admin/routes HTTP/1.1\r\nHost: a\r\n\r\n"));
    Client rst(gw.port());  // closes with a reset: the connection is gone before the answer
    ASSERT_TRUE(rst.send("GET /apisix/admin/routes HTTP/1.1\r\nHost: a\r\n\r\n"));
    ASSERT_TRUE(eventually([&] { return admin->count() == 2; }));
    fin.close();
    rst.reset();
  }
  ASSERT_TRUE(eventually([&] { return admin->replied() == 2; }));
  std::this_thread::sleep_for(20ms);  // let the worker take the answers off its loop
  Client c(gw.port());
  ASSERT_TRUE(c.send("GET /apisix/admin/after HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_EQ(c.read().body, "{\"path\":\"/apisix/admin/after\",\"len\":0}");
}

TEST(AdminPathTest, NoAnswerTimesOutWith504AndALateAnswerIsDropped) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kNever);
  TestGateway gw(admin, ListenerKind::kAdmin, true, /*reply_timeout_ms=*/100);
  Client c(gw.port());
  ASSERT_TRUE(c.send("GET /apisix/admin/routes HTTP/1.1\r\nHost: a\r\n\r\n"));
  Response r = c.read();
  EXPECT_EQ(r.status, 504) << r.head;
  EXPECT_EQ(r.header("Connection"), "close");
  EXPECT_TRUE(c.closed_by_server());
  admin->reply_pending();  // finds no connection: dropped
  Client next(gw.port());
  ASSERT_TRUE(next.send("GET /apisix/admin/x HTTP/1.1\r\nHost: a\r\n\r\n"));
  ASSERT_TRUE(eventually([&] { return admin->count() == 2; }));
  admin->reply_pending();
  EXPECT_EQ(next.read().body, "{\"late\":true}");
}

TEST(AdminPathTest, AnswerAfterTheWorkerStoppedIsDropped) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kNever);
  TestGateway gw(admin, ListenerKind::kAdmin);
  Client c(gw.port());
  ASSERT_TRUE(c.send("GET /apisix/admin/routes HTTP/1.1\r\nHost: a\r\n\r\n"));
  ASSERT_TRUE(eventually([&] { return admin->count() == 1; }));
  gw.stop();               // the drain deadline closes the waiting connection
  admin->reply_pending();  // posted to a stopped loop; discarded with the worker
  EXPECT_EQ(c.read().status, 0);
}

TEST(AdminPathTest, ProxyPortSendsOnlyTheAdminPrefixToTheHandler) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kImmediate);
  TestGateway gw(admin, ListenerKind::kProxy);
  Client c(gw.port());
  struct Case {
    std::string target;
    bool admin;
    std::string path, query;
  };
  std::vector<Case> cases = {
      {"/apisix/admin/routes", true, "/apisix/admin/routes", ""},
      {"/apisix/admin", true, "/apisix/admin", ""},
      {"/apisix/admin?a=1", true, "/apisix/admin", "a=1"},
      {"/apisix/admin/", true, "/apisix/admin/", ""},
      {"/apisix/administrator", false, "", ""},
      {"/apisix/adm", false, "", ""},
      {"/apisix/Admin/routes", false, "", ""},
      {"/x/apisix/admin/routes", false, "", ""},
  };
  size_t submitted = 0;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.target);
    ASSERT_TRUE(c.send("GET " + k.target + " HTTP/1.1\r\nHost: a\r\n\r\n"));
    Response r = c.read();
    if (k.admin) {
      EXPECT_EQ(r.status, 200);
      ASSERT_EQ(admin->count(), ++submitted);
      AdminRequest q = admin->request(submitted - 1);
      EXPECT_EQ(q.path, k.path);
      EXPECT_EQ(q.query, k.query);
      EXPECT_TRUE(q.on_proxy_port);
    } else {
      EXPECT_EQ(r.status, 404);
      EXPECT_EQ(r.body, "{\"error_msg\":\"404 Route Not Found\"}\n");
      EXPECT_EQ(admin->count(), submitted);
    }
  }
}

TEST(AdminPathTest, WithoutAHandlerTheAdminPrefixIsRoutedLikeAnyPath) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kImmediate);
  TestGateway gw(admin, ListenerKind::kProxy, /*admin_in_settings=*/false);
  Client c(gw.port());
  ASSERT_TRUE(
      c.send("PUT /apisix/admin/routes/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"));
  Response r = c.read();
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "{\"error_msg\":\"404 Route Not Found\"}\n");
  EXPECT_EQ(admin->count(), 0u);
}

TEST(AdminPathTest, AnAdminListenerWithoutAHandlerIsRefused) {
  auto admin = std::make_shared<FakeAdmin>(FakeAdmin::Mode::kImmediate);
  TestGateway gw(admin, ListenerKind::kAdmin, /*admin_in_settings=*/false);
  Client c(gw.port());
  EXPECT_FALSE(c.connected());
  EXPECT_EQ(admin->count(), 0u);
}

}  // namespace
}  // namespace sluice::server
