#include "admin/audit.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>

#include "admin/auth.h"
#include "common/log.h"
#include "config/secret_fields.h"
#include "store/config_index.h"

namespace sluice::admin {

using common::Status;
using common::StatusOr;
using Json = nlohmann::json;

namespace {

constexpr size_t kDefaultList = 100;
constexpr size_t kMaxList = 1000;
constexpr std::string_view kMasked = "<secret: not in the audit log>";

std::string now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch());
  const time_t t = static_cast<time_t>(ms.count() / 1000);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  const size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03}Z", std::string_view(buf, n), ms.count() % 1000);
}

// A stored value as the record shows it: the object, secrets masked; null when absent.
Json shown(const std::string& prefix, const std::string& key,
           const std::optional<std::string>& value) {
  if (!value) {
    return nullptr;
  }
  Json v = Json::parse(*value, nullptr, false);
  if (v.is_discarded()) {
    return *value;  // not JSON (a store written by hand): as stored
  }
  store::KeyParts parts;
  std::string kind = store::is_credential_key(prefix, key)   ? "credentials"
                     : store::split_key(prefix, key, &parts) ? std::string(parts.kind)
                                                             : std::string();
  if (!kind.empty() && v.is_object()) {
    config::mask_secrets(kind, &v, kMasked);
  }
  return v;
}

// The last `n` complete lines of the file, oldest first; reads backwards in blocks.
StatusOr<std::vector<std::string>> last_lines(const std::string& path, size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return std::vector<std::string>{};
    }
    return Status::error(fmt::format("cannot read {}: {}", path, strerror(errno)));
  }
  struct stat st {};
  ::fstat(fd, &st);
  std::string tail;  // the file's end, growing backwards
  off_t at = st.st_size;
  size_t newlines = 0;
  while (at > 0 && newlines <= n) {
    const size_t want = static_cast<size_t>(std::min<off_t>(at, 65536));
    at -= static_cast<off_t>(want);
    std::string block(want, '\0');
    const ssize_t got = ::pread(fd, block.data(), want, at);
    if (got != static_cast<ssize_t>(want)) {
      ::close(fd);
      return Status::error(fmt::format("cannot read {}", path));
    }
    newlines += static_cast<size_t>(std::count(block.begin(), block.end(), '\n'));
    tail.insert(0, block);
  }
  ::close(fd);
  // Complete lines only: the first piece may have begun before the blocks read, and what
  // follows the last newline is a line still being written (or torn).
  std::vector<std::string> lines;
  size_t begin = 0;
  bool first = true;
  for (size_t nl = tail.find('\n'); nl != std::string::npos; nl = tail.find('\n', begin)) {
    if (!(first && at > 0)) {
      lines.push_back(tail.substr(begin, nl - begin));
    }
    first = false;
    begin = nl + 1;
  }
  if (lines.size() > n) {
    lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  }
  return lines;
}

}  // namespace

StatusOr<store::Entry> RecordingStore::put(std::string_view key, std::string_view value,
                                           int64_t ttl_seconds, std::optional<int64_t> expect) {
  std::optional<std::string> before;
  if (recording_) {
    auto e = inner_.get(key);
    if (e && *e) {
      before = (*e)->value;
    }
  }
  auto r = inner_.put(key, value, ttl_seconds, expect);
  if (r && recording_) {
    changes_.push_back({std::string(key), std::move(before), std::string(value)});
  }
  return r;
}

StatusOr<std::optional<store::Entry>> RecordingStore::remove(std::string_view key,
                                                             std::optional<int64_t> expect) {
  auto r = inner_.remove(key, expect);
  if (r && *r && recording_) {
    changes_.push_back({std::string(key), (*r)->value, std::nullopt});
  }
  return r;
}

Status RecordingStore::apply_batch(const std::vector<store::BatchOp>& ops) {
  std::vector<AuditChange> pending;
  if (recording_) {
    for (const store::BatchOp& op : ops) {
      auto e = inner_.get(op.key);
      pending.push_back({op.key, e && *e ? std::optional((*e)->value) : std::nullopt,
                         op.remove ? std::nullopt : std::optional(op.value)});
    }
  }
  Status s = inner_.apply_batch(ops);
  if (s) {
    for (AuditChange& c : pending) {
      changes_.push_back(std::move(c));
    }
  }
  return s;
}

void AuditLog::record(const server::AdminRequest& req, const config::AdminKey* who,
                      const server::AdminResponse& resp, int64_t revision,
                      const std::vector<AuditChange>& changes, const std::string& prefix) {
  if (!on()) {
    return;
  }
  Json rec = {{"time", now_iso8601()},
              {"key_name", who != nullptr ? Json(who->name) : Json(nullptr)},
              {"role", who == nullptr                            ? Json(nullptr)
                       : who->role == config::AdminRole::kViewer ? Json("viewer")
                                                                 : Json("admin")},
              {"client_ip", req.peer_ip},
              {"method", req.method},
              {"uri", req.path},  // the query is left out: it may carry api_key
              {"status", resp.status}};
  if (resp.status >= 400) {
    Json body = Json::parse(resp.body, nullptr, false);
    if (body.is_object() && body.contains("error_msg")) {
      rec["error_msg"] = body["error_msg"];
    }
  }
  if (!changes.empty()) {
    rec["revision"] = revision;
  }
  rec["changes"] = Json::array();
  for (const AuditChange& c : changes) {
    rec["changes"].push_back({{"key", c.key},
                              {"before", shown(prefix, c.key, c.before)},
                              {"after", shown(prefix, c.key, c.after)}});
  }
  const std::string line = rec.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0 && errno == ENOENT) {  // its directory is made at the first record, not before
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ignored);
    fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  }
  if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    SLUICE_LOG(kError, "admin audit log {}: cannot append: {}", path_, strerror(errno));
  }
  if (fd >= 0) {
    ::close(fd);
  }
}

server::AdminResponse AuditLog::list(const server::AdminRequest& req) const {
  server::AdminResponse r;
  r.headers.emplace_back("X-API-VERSION", "v3");
  if (req.method != "GET") {
    r.status = 405;
    r.body = R"({"error_msg":"the audit log is read-only: GET only"})";
    return r;
  }
  if (!on()) {
    r.status = 404;
    r.body = R"j({"error_msg":"the audit log is off (sluice.admin_audit_log)"})j";
    return r;
  }
  size_t limit = kDefaultList;
  if (auto q = query_param(req.query, "limit")) {
    const auto p = std::from_chars(q->data(), q->data() + q->size(), limit);
    if (p.ec != std::errc() || p.ptr != q->data() + q->size() || limit < 1 || limit > kMaxList) {
      r.status = 400;
      r.body = fmt::format(R"({{"error_msg":"limit: expected an integer 1-{}"}})", kMaxList);
      return r;
    }
  }
  auto lines = last_lines(path_, limit);
  if (!lines) {
    r.status = 500;
    r.body = Json{{"error_msg", lines.status().message()}}.dump();
    return r;
  }
  Json list = Json::array();
  for (const std::string& l : *lines) {
    Json rec = Json::parse(l, nullptr, false);
    if (rec.is_object()) {
      list.push_back(std::move(rec));
    }
  }
  r.body = Json{{"total", list.size()}, {"list", std::move(list)}}.dump();
  return r;
}

}  // namespace sluice::admin
