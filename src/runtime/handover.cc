#include "runtime/handover.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/inherited_fds.h"

extern char** environ;

namespace sluice::runtime {

namespace {

bool same_addr(const io::SockAddr& a, const io::SockAddr& b) {
  if (a.storage.ss_family != b.storage.ss_family || a.port() != b.port()) {
    return false;
  }
  return a.ip_text() == b.ip_text();
}

bool is_listening(int fd) {
  int on = 0;
  socklen_t len = sizeof(on);
  return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on != 0;
}

}  // namespace

std::vector<int> take_inherited_listeners(const io::SockAddr& addr) {
  std::vector<int> taken;
  for (int fd : std::vector<int>(common::inherited_fds())) {
    io::SockAddr local;
    local.len = sizeof(local.storage);
    if (!is_listening(fd) ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.len) != 0 ||
        !same_addr(local, addr)) {
      continue;
    }
    common::take_inherited_fd(fd);
    taken.push_back(fd);
  }
  return taken;
}

size_t close_untaken_inherited() {
  std::vector<int>& left = common::inherited_fds();
  size_t n = left.size();
  for (int fd : left) {
    ::close(fd);
  }
  left.clear();
  return n;
}

int find_open_fd(const std::string& path) {
  char want[PATH_MAX];
  if (realpath(path.c_str(), want) == nullptr) {
    return -1;
  }
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) {
    return -1;
  }
  int found = -1;
  while (dirent* e = readdir(dir)) {
    char target[PATH_MAX];
    std::string link = std::string("/proc/self/fd/") + e->d_name;
    ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == want) {
      found = std::atoi(e->d_name);
      break;
    }
  }
  closedir(dir);
  return found;
}

struct WorkerPark::State {
  std::mutex mu;
  std::condition_variable cv;
  size_t parked = 0;
  bool released = false;
};

WorkerPark::WorkerPark(const std::vector<io::EventLoop*>& loops, int timeout_ms)
    : state_(std::make_shared<State>()) {
  for (io::EventLoop* loop : loops) {
    loop->post([st = state_] {
      std::unique_lock lock(st->mu);
      ++st->parked;
      st->cv.notify_all();
      st->cv.wait(lock, [&] { return st->released; });
    });
  }
  std::unique_lock lock(state_->mu);
  parked_ = state_->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                [&] { return state_->parked == loops.size(); });
}

WorkerPark::~WorkerPark() {
  std::lock_guard lock(state_->mu);
  state_->released = true;
  state_->cv.notify_all();
}

namespace {

// Waits until every copy of the pipe's write end is closed: the child closed its own in main().
void wait_started(int read_fd, int wait_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  char byte;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    pollfd p{read_fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) == 0) {
      return;
    }
    ssize_t n = ::read(read_fd, &byte, 1);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
      return;
    }
  }
}

}  // namespace

common::StatusOr<pid_t> spawn_successor(const std::vector<std::string>& argv,
                                        const std::vector<int>& fds, int wait_ms) {
  if (argv.empty()) {
    return common::Status::error("the command line this process started with is unknown");
  }
  // dup() leaves close-on-exec off on the copies only: the originals stay as they are.
  std::vector<int> copies;
  std::string list;
  for (int fd : fds) {
    int c = ::dup(fd);
    if (c < 0) {
      continue;
    }
    copies.push_back(c);
    list += (list.empty() ? "" : ",") + std::to_string(c);
  }
  std::vector<std::string> env_text;
  const std::string prefix = std::string(common::kInheritedFdsEnv) + "=";
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) {
      env_text.emplace_back(*e);
    }
  }
  env_text.push_back(prefix + list);
  int started[2] = {-1, -1};
  if (::pipe2(started, O_CLOEXEC) == 0) {
    int w = ::dup(started[1]);  // without close-on-exec: the child's to close
    ::close(started[1]);
    started[1] = w;
    env_text.push_back(std::string(common::kStartedFdEnv) + "=" + std::to_string(w));
  }
  std::vector<char*> envp, args;
  for (auto& s : env_text) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) {
    args.push_back(s.data());
  }
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), envp.data());
  for (int c : copies) {
    ::close(c);
  }
  if (started[1] >= 0) {
    ::close(started[1]);
  }
  if (started[0] >= 0) {
    if (rc == 0) {
      wait_started(started[0], wait_ms);
    }
    ::close(started[0]);
  }
  if (rc != 0) {
    return common::Status::error(fmt::format("cannot start {}: {}", argv[0], strerror(rc)));
  }
  return pid;
}

}  // namespace sluice::runtime
