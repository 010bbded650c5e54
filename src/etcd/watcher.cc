#include "etcd/watcher.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <random>

#include "common/log.h"
#include "etcd/etcd_store.h"
#include "store/config_index.h"

namespace sluice::etcd {

using common::Status;

namespace {

constexpr int kBackoffBaseMs = 100;
constexpr int kBackoffCapMs = 5000;
// A watch stream has no deadline of its own: it may stay quiet for hours. A dead member is
// noticed by TCP keep-alive (see conn.cc); this bounds one read all the same.
// The watch asks for progress notifications, which etcd sends every 10 minutes by default on
// a quiet stream; a stream silent for longer than this is taken as stalled and re-opened.
constexpr auto kStreamReadLimit = std::chrono::minutes(25);
// A full read goes in pages of this many keys, all at the revision of the first page.
constexpr int64_t kPageKeys = 1000;
constexpr size_t kMaxMessage = 64u << 20;

}  // namespace

bool ObjectSplitter::feed(std::string* buf, std::vector<std::string>* out) {
  const size_t n = buf->size();
  if (scanned_ > n) {  // not the buffer it was fed before: start over on this one
    *this = ObjectSplitter();
  }
  const char* p = buf->data();
  for (size_t i = scanned_; i < n; ++i) {
    char c = p[i];
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (depth_ == 0) {
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        start_ = i + 1;
        continue;
      }
      if (c != '{') {
        return false;
      }
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        out->emplace_back(p + start_, i + 1 - start_);
        start_ = i + 1;
      } else if (depth_ < 0) {
        return false;
      }
    }
  }
  bytes_examined_ += n - scanned_;
  // Drop what is split off (and whitespace between objects); keep the incomplete object,
  // whose bytes are scanned already.
  buf->erase(0, start_);
  scanned_ = buf->size();
  start_ = 0;
  return buf->size() <= kMaxMessage;
}

Watcher::Watcher(ClientOptions opts, std::string prefix, std::function<void()> notify)
    : opts_(std::move(opts)), prefix_(std::move(prefix) + "/"), notify_(std::move(notify)) {
  cancel_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

Watcher::~Watcher() {
  stopping_.store(true);
  if (cancel_fd_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(cancel_fd_, &one, sizeof(one));
  }
  if (thread_.joinable()) {
    thread_.join();
  }
  if (cancel_fd_ >= 0) {
    close(cancel_fd_);
  }
}

void Watcher::start() {
  thread_ = std::thread([this] { run(); });
}

std::vector<WatchEvent> Watcher::take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WatchEvent> out;
  out.swap(queue_);
  return out;
}

bool Watcher::wait_synced(int ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return synced_; });
}

void Watcher::push(WatchEvent ev) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ev.kind == WatchEvent::Kind::kResync) {
      queue_.clear();  // a whole new set replaces whatever was not taken yet
      synced_ = true;
    }
    queue_.push_back(std::move(ev));
  }
  cv_.notify_all();
  notify_();
}

void Watcher::set_reachable(bool up) {
  if (reachable_.exchange(up) != up) {
    if (up) {
      SLUICE_LOG(kNotice, "etcd: watching {} on {}", prefix_,
                 opts_.endpoints.size() == 1 ? opts_.endpoints[0].url : "the cluster");
    } else {
      SLUICE_LOG(kError, "etcd: unreachable; serving the last configuration it gave");
    }
    notify_();
  }
}

bool Watcher::pause(int ms) {
  pollfd p = {cancel_fd_, POLLIN, 0};
  poll(&p, 1, ms);
  return !stopping_.load();
}

void Watcher::run() {
  Client client(opts_, cancel_fd_);
  std::mt19937 rng(std::random_device{}());
  int failures = 0;
  std::string last_logged;
  Clock::time_point logged_at;
  while (!stopping_.load()) {
    bool healthy = false;
    events_seen_ = false;
    auto began = Clock::now();
    Status st;
    try {
      st = need_sync_ ? sync(client) : check_member(client);
      if (st && need_sync_) {
        st = sync(client);
      }
      if (st) {
        st = follow(client, &healthy);
      }
    } catch (const std::exception& e) {  // an answer of a shape no etcd sends: a broken stream
      st = Status::error(fmt::format("unexpected answer: {}", e.what()));
    }
    // The backoff starts over only after a stream that worked: one that delivered events or
    // lived a while, not one that is accepted and then fails at once, again and again.
    if (healthy && (events_seen_ || Clock::now() - began > std::chrono::seconds(5))) {
      failures = 0;
    }
    if (stopping_.load()) {
      break;
    }
    // While etcd stays down the same failure repeats every few seconds: say it once, and
    // again only when it changes or every minute.
    auto now = Clock::now();
    if (st.message() != last_logged || now - logged_at > std::chrono::minutes(1)) {
      if (need_sync_ && healthy) {
        SLUICE_LOG(kNotice, "etcd: watch: {}", st.message());
      } else {
        SLUICE_LOG(kWarn, "etcd: watch: {}", st.message());
      }
      last_logged = st.message();
      logged_at = now;
    }
    client.rotate();
    if (failures++ == 0) {
      continue;  // a broken stream: the next member at once
    }
    set_reachable(false);
    int cap = std::min(kBackoffCapMs, kBackoffBaseMs << std::min(failures - 1, 10));
    int ms = std::uniform_int_distribution<int>(cap / 2, cap)(rng);
    if (!pause(ms)) {
      break;
    }
  }
}

Status Watcher::sync(Client& client) {
  WatchEvent ev;
  ev.kind = WatchEvent::Kind::kResync;
  std::string_view prefix(prefix_.data(), prefix_.size() - 1);
  const std::string end = prefix_end(prefix_);
  std::string from = prefix_;
  Header first;
  for (;;) {
    // Every page at the first page's revision: one consistent cut of the prefix. Should that
    // revision be compacted meanwhile, the call fails and the whole read starts over.
    Json body = {{"key", base64_encode(from)},
                 {"range_end", base64_encode(end)},
                 {"limit", std::to_string(kPageKeys)}};
    if (first.revision != 0) {
      body["revision"] = std::to_string(first.revision);
    }
    auto r = client.call("/v3/kv/range", body);
    if (!r) {
      return r.status();
    }
    if (first.revision == 0) {
      first = decode_header(*r);
    }
    auto kvs = r->find("kvs");
    size_t n = 0;
    std::string last;
    if (kvs != r->end() && kvs->is_array()) {
      for (const auto& j : *kvs) {
        KeyValue kv;
        if (!decode_kv(j, &kv)) {
          return Status::error("a range answer holds a key or value that is not base64");
        }
        ++n;
        last = kv.key;
        if (is_resource_key(prefix, kv)) {
          ev.entries.push_back(to_entry(std::move(kv)));
        }
      }
    }
    auto more = r->find("more");
    if (n == 0 || more == r->end() || !more->is_boolean() || !more->get<bool>()) {
      break;
    }
    from = last + std::string(1, '\0');  // the next key after the last one
  }
  ev.revision = first.revision;
  if (cluster_id_ != 0 && first.cluster_id != cluster_id_) {
    SLUICE_LOG(kWarn, "etcd: the cluster changed (id {:x} -> {:x}): configuration re-read",
               cluster_id_, first.cluster_id);
  }
  SLUICE_LOG(kNotice, "etcd: read {} resource(s) under {} at revision {}", ev.entries.size(),
             prefix_, ev.revision);
  cluster_id_ = first.cluster_id;
  revision_ = first.revision;
  need_sync_ = false;
  resyncs_.fetch_add(1, std::memory_order_relaxed);
  push(std::move(ev));
  return Status::ok();
}

Status Watcher::check_member(Client& client) {
  Json body = {{"key", base64_encode(prefix_)},
               {"range_end", base64_encode(prefix_end(prefix_))},
               {"count_only", true}};
  auto r = client.call("/v3/kv/range", body);
  if (!r) {
    return r.status();
  }
  Header h = decode_header(*r);
  if (h.revision < revision_ || (cluster_id_ != 0 && h.cluster_id != cluster_id_)) {
    SLUICE_LOG(kWarn,
               "etcd: {} is at revision {} (cluster {:x}), this node had {} (cluster {:x}): "
               "etcd was restored or replaced; re-reading everything",
               client.current().url, h.revision, h.cluster_id, revision_, cluster_id_);
    need_sync_ = true;
  }
  return Status::ok();
}

Status Watcher::follow(Client& client, bool* healthy) {
  const Endpoint& ep = client.current();
  Deadline connect_by = Clock::now() + std::chrono::milliseconds(opts_.timeout_ms);
  auto conn = Conn::open(ep, opts_.tls.get(), connect_by, cancel_fd_);
  if (!conn) {
    return conn.status();
  }
  Json create = {{"key", base64_encode(prefix_)},
                 {"range_end", base64_encode(prefix_end(prefix_))},
                 {"start_revision", std::to_string(revision_ + 1)},
                 {"progress_notify", true}};
  Status st = (*conn)->post("/v3/watch", Json{{"create_request", create}}.dump(), client.token(),
                            connect_by);
  if (!st) {
    return st;
  }
  auto status = (*conn)->read_stream_head(connect_by);
  if (!status) {
    return status.status();
  }
  if (*status != 200) {
    return Status::error(fmt::format("{}: the watch was refused with HTTP {}", ep.url, *status));
  }
  bool created = false;
  std::string buf;
  std::vector<std::string> msgs;
  ObjectSplitter splitter;
  for (;;) {
    st = (*conn)->read_stream(&buf, Clock::now() + kStreamReadLimit);
    if (!st) {
      return st;
    }
    msgs.clear();
    if (!splitter.feed(&buf, &msgs)) {
      return Status::error(fmt::format("{}: the watch stream is not JSON", ep.url));
    }
    for (const auto& m : msgs) {
      Json j = Json::parse(m, nullptr, false);
      bool was_created = created;
      st = handle(j, &created);
      if (!was_created && created) {
        *healthy = true;
        set_reachable(true);
      }
      if (!st) {
        return st;
      }
    }
  }
}

namespace {

// A field of an etcd answer read without trusting its type: a wrong one reads as absent.
bool flag(const Json& obj, const char* name) {
  auto it = obj.find(name);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

std::string text(const Json& obj, const char* name) {
  auto it = obj.find(name);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Status Watcher::handle(const Json& msg, bool* created) {
  if (!msg.is_object()) {
    return Status::error("the watch stream sent a message that is not a JSON object");
  }
  auto err = msg.find("error");
  if (err != msg.end()) {
    return Status::error(fmt::format("the watch failed: {}",
                                     err->dump(-1, ' ', false, Json::error_handler_t::replace)));
  }
  auto it = msg.find("result");
  if (it == msg.end() || !it->is_object()) {
    return Status::ok();
  }
  const Json& res = *it;
  Header h = decode_header(res);
  if (flag(res, "created")) {
    *created = true;
    if (h.revision < revision_) {
      need_sync_ = true;
      return Status::error("etcd's revision went backwards: re-reading everything");
    }
    return Status::ok();
  }
  int64_t compacted = json_i64(res, "compact_revision");
  if (compacted > 0) {
    need_sync_ = true;
    SLUICE_LOG(kWarn,
               "etcd: the watch from revision {} was compacted (now {}): re-reading everything",
               revision_ + 1, compacted);
    return Status::error("compacted");
  }
  if (flag(res, "canceled")) {
    std::string why = text(res, "cancel_reason");
    return Status::error(
        fmt::format("the watch was cancelled: {}", why.empty() ? "no reason given" : why));
  }
  auto events = res.find("events");
  if (events == res.end() || !events->is_array() || events->empty()) {
    // A progress notification: every event up to its revision has been sent, so a watch
    // re-opened later may start after it (it is then less likely to have been compacted).
    if (*created && h.revision > revision_) {
      revision_ = h.revision;
    }
    return Status::ok();
  }
  events_seen_ = true;
  WatchEvent ev;
  std::string_view prefix(prefix_.data(), prefix_.size() - 1);
  for (const auto& e : *events) {
    KeyValue kv;
    auto kvit = e.is_object() ? e.find("kv") : e.end();
    if (!e.is_object() || kvit == e.end() || !decode_kv(*kvit, &kv)) {
      SLUICE_LOG(kError, "etcd: a watch event that does not decode was skipped");
      continue;
    }
    bool deleted = text(e, "type") == "DELETE";
    revision_ = std::max(revision_, kv.mod_revision);
    if (!is_resource_key(prefix, kv)) {  // a DELETE's kv has no value: the key decides
      continue;
    }
    ev.changes.push_back(store::Change{deleted, to_entry(std::move(kv))});
  }
  ev.revision = revision_;
  if (!ev.changes.empty()) {
    push(std::move(ev));
  }
  return Status::ok();
}

}  // namespace sluice::etcd
