#include "io/port_owner.h"

#include <dirent.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace sluice::io {

namespace {

constexpr const char* kListen = "0A";  // TCP_LISTEN in /proc/net/tcp's `st` column

// Inodes of the sockets listening on `port`.
std::set<std::string> listening_inodes(uint16_t port) {
  std::set<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, st, queues, tr, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> st >> queues >> tr >> retr >> uid >> timeout >> inode;
      size_t colon = local.rfind(':');
      if (st != kListen || colon == std::string::npos || inode.empty() || inode == "0") {
        continue;
      }
      if (std::strtoul(local.c_str() + colon + 1, nullptr, 16) == port) {
        inodes.insert(inode);
      }
    }
  }
  return inodes;
}

std::string process_name(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// The first pid (other than except_pid) with an open descriptor on one of `inodes`.
std::string find_pid(const std::set<std::string>& inodes, int except_pid) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) {
    return {};
  }
  std::string found;
  const std::string except = std::to_string(except_pid);
  while (dirent* e = readdir(proc)) {
    std::string pid = e->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid == except) {
      continue;
    }
    std::string fd_dir = "/proc/" + pid + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) {
      continue;  // another user's process
    }
    while (dirent* f = readdir(fds)) {
      char target[64];
      std::string link = fd_dir + "/" + f->d_name;
      ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
      if (n <= 9) {
        continue;
      }
      std::string t(target, static_cast<size_t>(n));  // "socket:[12345]"
      if (t.rfind("socket:[", 0) == 0 && inodes.count(t.substr(8, t.size() - 9)) != 0) {
        found = pid;
        break;
      }
    }
    closedir(fds);
    if (!found.empty()) {
      break;
    }
  }
  closedir(proc);
  return found;
}

}  // namespace

std::string port_owner(uint16_t port, int except_pid) {
  std::set<std::string> inodes = listening_inodes(port);
  if (inodes.empty()) {
    return {};
  }
  std::string pid = find_pid(inodes, except_pid);
  if (pid.empty()) {
    return {};
  }
  return fmt::format("pid {} ({})", pid, process_name(pid));
}

}  // namespace sluice::io
