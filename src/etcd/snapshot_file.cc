#include "etcd/snapshot_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/file.h"

namespace sluice::etcd {

using common::Status;
using common::StatusOr;
using Json = nlohmann::json;

namespace {

constexpr std::string_view kMagic = "sluice-etcd-snapshot 1 sha256:";

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += fmt::format("{:02x}", md[i]);
  }
  return out;
}

Status write_fd(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return Status::error(strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::ok();
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status write_snapshot_file(const std::string& path, const PersistedSet& set) {
  Json entries = Json::array();
  for (const auto& e : set.entries) {
    entries.push_back({{"key", e.key},
                       {"value", e.value},
                       {"create_revision", e.create_revision},
                       {"mod_revision", e.mod_revision}});
  }
  std::string payload =
      Json{{"prefix", set.prefix}, {"revision", set.revision}, {"entries", std::move(entries)}}
          .dump();
  std::string text =
      fmt::format("{}{} {}\n{}", kMagic, sha256_hex(payload), payload.size(), payload);
  std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::error(fmt::format("{}: {}", tmp, strerror(errno)));
  }
  Status st = write_fd(fd, text);
  if (st && fsync(fd) != 0) {
    st = Status::error(strerror(errno));
  }
  close(fd);
  if (st && rename(tmp.c_str(), path.c_str()) != 0) {
    st = Status::error(strerror(errno));
  }
  if (!st) {
    unlink(tmp.c_str());
    return Status::error(fmt::format("{}: {}", path, st.message()));
  }
  int dfd = open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return Status::ok();
}

StatusOr<PersistedSet> read_snapshot_file(const std::string& path) {
  std::string text;
  if (!common::read_file(path, &text)) {
    return Status::error(fmt::format("{}: {}", path, strerror(errno)));
  }
  auto bad = [&](std::string_view why) {
    return Status::error(fmt::format("{}: refused: {}", path, why));
  };
  size_t nl = text.find('\n');
  if (nl == std::string::npos || !std::string_view(text).starts_with(kMagic)) {
    return bad("not a Sluice etcd snapshot");
  }
  std::string_view head(text.data() + kMagic.size(), nl - kMagic.size());
  size_t space = head.find(' ');
  if (space == std::string_view::npos) {
    return bad("damaged first line");
  }
  std::string_view sum = head.substr(0, space);
  std::string_view payload(text.data() + nl + 1, text.size() - nl - 1);
  if (std::string(head.substr(space + 1)) != std::to_string(payload.size())) {
    return bad("truncated or extended (length differs)");
  }
  if (sha256_hex(payload) != sum) {
    return bad("checksum mismatch");
  }
  Json j = Json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array()) {
    return bad("malformed payload");
  }
  PersistedSet out;
  try {
    out.prefix = j.at("prefix").get<std::string>();
    out.revision = j.at("revision").get<int64_t>();
    for (const auto& e : j["entries"]) {
      store::Entry en;
      en.key = e.at("key").get<std::string>();
      en.value = e.at("value").get<std::string>();
      en.create_revision = e.at("create_revision").get<int64_t>();
      en.mod_revision = e.at("mod_revision").get<int64_t>();
      out.entries.push_back(std::move(en));
    }
  } catch (const Json::exception&) {
    return bad("malformed payload");
  }
  return out;
}

}  // namespace sluice::etcd
