#include "plugins/proxy_cache/request_state.h"

#include <unistd.h>

#include <algorithm>

#include "common/log.h"
#include "io/event_loop.h"
#include "plugins/proxy_cache/proxy_cache.h"

namespace sluice::plugins::proxy_cache {

plugin::BodySource::Read MemorySource::next(std::string_view* piece) {
  if (body_.empty()) {
    return Read::kEnd;
  }
  // At most a file piece at a time: a body filter (gzip) then works in bounded buffers.
  size_t n = std::min(body_.size(), FileSource::kPiece);
  *piece = body_.substr(0, n);
  body_.remove_prefix(n);
  return Read::kData;
}

void FileSource::set(DiskZone* zone, DiskZone::Open* open, std::string* buf) {
  zone_ = zone;
  open_ = open;
  buf_ = buf;
  at_ = open->body_at;
  left_ = open->body_len;
  sum_ = Checksum();
}

plugin::BodySource::Read FileSource::next(std::string_view* piece) {
  if (left_ == 0) {
    if (sum_.value() != open_->body_sum) {
      zone_->broken(open_->meta.key, key_hash(open_->meta.key), "checksum mismatch in its body");
      return Read::kError;
    }
    return Read::kEnd;
  }
  size_t n = left_ < kPiece ? static_cast<size_t>(left_) : kPiece;
  buf_->resize(kPiece);
  ssize_t r = ::pread(open_->fd, buf_->data(), n, static_cast<off_t>(at_));
  if (r <= 0) {
    zone_->broken(open_->meta.key, key_hash(open_->meta.key), "short read");
    return Read::kError;
  }
  at_ += static_cast<uint64_t>(r);
  left_ -= static_cast<uint64_t>(r);
  *piece = std::string_view(buf_->data(), static_cast<size_t>(r));
  sum_.add(*piece);
  return Read::kData;
}

void RequestState::end_fill() {
  writer.abort();
  building.reset();
  if (joined) {
    joined = false;
    std::vector<Waiter> ws = mem != nullptr ? mem->fills.finish(key) : disk->fills.finish(key);
    Fills::wake_all(std::move(ws), &ProxyCache::wake);
  }
}

void RequestState::start_wait(plugin::Context& ctx, uint64_t token) {
  host = ctx.worker->host;
  wait_token = token;
  ctx.worker->loop->arm(lock_timer, kLockTimeoutMs);
}

void RequestState::stop_wait() {
  io::TimerQueue::cancel(lock_timer);
  wait_token = 0;
}

void RequestState::on_lock_timeout(void* self) {
  auto* st = static_cast<RequestState*>(self);
  uint64_t token = st->wait_token;
  st->wait_token = 0;
  if (token != 0 && st->host->waiting(token) != nullptr) {
    SLUICE_LOG(kInfo, "proxy-cache: key {}: the fetch in flight took over {} ms; going upstream",
               st->key, kLockTimeoutMs);
    st->host->resume(token, plugin::Action::kContinue);  // its fill's wake finds it gone
  }
}

void RequestState::release() {
  stop_wait();
  end_fill();
  if (open.fd >= 0) {
    ::close(open.fd);
    open.fd = -1;
  }
  entry.reset();
  role = Role::kNone;
  convert_head = false;
  gateway_error = 0;
  plugin = nullptr;
  mem = nullptr;
  disk = nullptr;
  if (buf.capacity() > (1 << 20)) {
    std::string().swap(buf);  // a small disk body read whole is not kept
  }
  pool->give(this);
}

RequestState* StatePool::take() {
  if (free_.empty()) {
    all_.push_back(std::make_unique<RequestState>());
    all_.back()->pool = this;
    return all_.back().get();
  }
  RequestState* s = free_.back();
  free_.pop_back();
  return s;
}

}  // namespace sluice::plugins::proxy_cache
