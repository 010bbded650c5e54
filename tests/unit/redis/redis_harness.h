#pragma once
// Test helpers for the redis room: real redis-server processes on free loopback ports, each in
// its own temporary directory (killed by pid and removed when the test ends), an event loop
// running on its own thread, and a recorder of callback outcomes.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "io/event_loop.h"
#include "io/socket.h"
#include "redis/client.h"
#include "redis/resp.h"

namespace sluice::redis::testing {

inline constexpr char kRedisServer[] = "/usr/bin/redis-server";
inline constexpr char kRedisCli[] = "/usr/bin/redis-cli";

inline bool have_redis() { return access(kRedisServer, X_OK) == 0 && access(kRedisCli, X_OK) == 0; }

#define REQUIRE_REDIS()                                                        \
  do {                                                                         \
    if (!::sluice::redis::testing::have_redis()) {                             \
      GTEST_FAIL() << "/usr/bin/redis-server or redis-cli is not installed "   \
                      "(scripts/setup installs redis-server and redis-tools)"; \
    }                                                                          \
  } while (0)

inline bool can_bind(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  io::SockAddr a;
  io::make_sockaddr("127.0.0.1", port, &a);
  const bool ok = bind(fd, a.get(), a.len) == 0;
  close(fd);
  return ok;
}

// A loopback port nobody listens on (and, for a cluster node, its bus port + 10000 too).
inline uint16_t free_port(bool cluster_bus = false) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    io::SockAddr a;
    io::make_sockaddr("127.0.0.1", 0, &a);
    bind(fd, a.get(), a.len);
    sockaddr_in sin{};
    socklen_t len = sizeof(sin);
    getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len);
    close(fd);
    const uint16_t port = ntohs(sin.sin_port);
    if (!cluster_bus || (port < 55000 && can_bind(static_cast<uint16_t>(port + 10000)))) {
      return port;
    }
  }
  return 0;
}

inline bool port_accepts(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  io::SockAddr a;
  io::make_sockaddr("127.0.0.1", port, &a);
  const bool ok = connect(fd, a.get(), a.len) == 0;
  close(fd);
  return ok;
}

// Runs argv[0] (no shell) and returns its stdout, trailing newlines removed.
inline std::string run_capture(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    return "";
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
    out.pop_back();
  }
  return out;
}

// A redis-server child process in its own temporary directory.
// Thread: any (test only; one thread at a time)
class RedisServer {
 public:
  // `extra` are more command-line options ("--requirepass", "x", ...). Port 0 picks one.
  explicit RedisServer(std::vector<std::string> extra = {}, uint16_t port = 0, bool cluster = false)
      : extra_(std::move(extra)), cluster_(cluster) {
    char tmpl[] = "/tmp/sluice-redis-XXXXXX";
    dir_ = mkdtemp(tmpl) != nullptr ? tmpl : "";
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      port_ = port != 0 ? port : free_port(cluster);
      if (!start() && port != 0) {
        break;
      }
    }
    EXPECT_GT(pid_, 0) << "redis-server did not start; log in " << dir_;
  }
  ~RedisServer() {
    kill_now();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  uint16_t port() const { return port_; }
  bool running() const { return pid_ > 0; }
  const std::string& dir() const { return dir_; }

  // Starts it again on the same port (after kill_now()).
  bool start() {
    std::vector<std::string> argv = {kRedisServer,
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--daemonize",
                                     "no",
                                     "--dir",
                                     dir_,
                                     "--logfile",
                                     dir_ + "/redis-" + std::to_string(port_) + ".log"};
    if (cluster_) {
      argv.insert(argv.end(), {"--cluster-enabled", "yes", "--cluster-config-file",
                               dir_ + "/nodes-" + std::to_string(port_) + ".conf"});
    }
    argv.insert(argv.end(), extra_.begin(), extra_.end());
    std::vector<char*> args;
    for (auto& a : argv) {
      args.push_back(a.data());
    }
    args.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test
      if (getppid() != parent) {
        _exit(1);
      }
      execv(args[0], args.data());
      _exit(127);
    }
    return wait_ready();
  }

  void kill_now() {
    if (pid_ > 0) {
      ::kill(pid_, SIGCONT);
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  void pause() { ::kill(pid_, SIGSTOP); }
  void resume() { ::kill(pid_, SIGCONT); }

  // redis-cli -p <port> args... (stdout, trimmed).
  std::string cli(std::vector<std::string> args) const {
    std::vector<std::string> argv = {kRedisCli, "-p", std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_capture(argv);
  }

 private:
  bool wait_ready() {
    for (int i = 0; i < 1000; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;  // exited: the port was taken, or a bad option
        return false;
      }
      if (port_accepts(port_)) {
        return true;
      }
      usleep(10 * 1000);
    }
    kill_now();
    return false;
  }

  std::vector<std::string> extra_;
  bool cluster_;
  std::string dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

// An event loop running on its own thread; the test thread runs code on it with call().
// Thread: any (call() and wait_until() from the test thread)
class LoopThread {
 public:
  LoopThread() : thread_([this] { loop_.run(); }) {}
  ~LoopThread() {
    loop_.post([this] { loop_.stop(); });
    thread_.join();
  }
  io::EventLoop& loop() { return loop_; }

  // Runs `fn` on the loop thread and returns its result.
  template <typename F>
  auto call(F fn) -> decltype(fn()) {
    using R = decltype(fn());
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
    auto result = task->get_future();
    loop_.post([task] { (*task)(); });
    return result.get();
  }

  // Evaluates `pred` on the loop thread every 2 ms until it holds or `timeout_ms` passes.
  bool wait_until(const std::function<bool()>& pred, int timeout_ms = 5000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!call(pred)) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }

  // Destroys a T made by make<T>() on the loop thread.
  template <typename T>
  struct Deleter {
    LoopThread* lt;
    void operator()(T* p) const {
      lt->call([p] { std::unique_ptr<T> gone(p); });
    }
  };
  template <typename T>
  using Ptr = std::unique_ptr<T, Deleter<T>>;

  // Builds a T(loop(), args...) on the loop thread; it is destroyed there too.
  template <typename T, typename... Args>
  Ptr<T> make(Args... args) {
    T* raw = call([&] { return std::make_unique<T>(loop_, args...).release(); });
    return Ptr<T>(raw, Deleter<T>{this});
  }

 private:
  io::EventLoop loop_;
  std::thread thread_;
};

// What one callback got.
struct Outcome {
  bool done = false;
  bool ok = false;  // a reply (possibly a Redis error reply) rather than an error
  std::string error;
  Reply reply;
  int calls = 0;
};

// Records callback outcomes by token, in arrival order. Touched only on the loop thread.
// Thread: worker
class Recorder {
 public:
  Callback cb(uint64_t token) { return Callback{&Recorder::on, this, token}; }

  // Called after recording each outcome (on the loop thread), e.g. to issue more commands.
  std::function<void(uint64_t token, const Outcome&)> then;

  static void on(void* ctx, uint64_t token, const Reply* reply, std::string_view error) {
    auto* self = static_cast<Recorder*>(ctx);
    EXPECT_TRUE((reply != nullptr) != !error.empty()) << "exactly one of reply and error";
    Outcome& o = self->results[token];
    ++o.calls;
    o.done = true;
    o.ok = reply != nullptr;
    o.error = std::string(error);
    if (reply != nullptr) {
      o.reply = *reply;
    }
    self->order.push_back(token);
    if (self->then) {
      self->then(token, o);
    }
  }

  bool done(uint64_t token) const {
    auto it = results.find(token);
    return it != results.end() && it->second.done;
  }
  std::map<uint64_t, Outcome> results;
  std::vector<uint64_t> order;
};

}  // namespace sluice::redis::testing
