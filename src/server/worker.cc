#include "server/worker.h"

#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "server/client_conn.h"
#include "server/listener.h"

namespace sluice::server {

Worker::Worker(int id, std::shared_ptr<const Settings> settings, std::shared_ptr<ConnLimits> limits)
    : id_(id), settings_(std::move(settings)), limits_(std::move(limits)), pool_(loop_) {
  plugin_local_.worker_id = id_;
  plugin_local_.loop = &loop_;
  plugin_local_.host = this;
  upstream_env_ = {&loop_,
                   &pool_,
                   &mux_,
                   &settings_->limits,
                   settings_->read_buffer,
                   settings_->max_read_buffer};
  if (settings_->access_log) {
    access_log_ = std::make_unique<accesslog::Writer>(settings_->access_log);
  }
}

Worker::~Worker() {
  clients_.clear();
  listeners_.clear();
  pool_.clear();
  // Retired connections hand their buffers back to the free lists: destroy them while the
  // lists still exist.
  loop_.bury();
}

void Worker::add_listener(int fd, ConnCounter* cap, ListenerKind kind,
                          const tls::ServerContext* tls) {
  if (kind == ListenerKind::kAdmin && !settings_->admin) {
    SLUICE_LOG(kError, "worker {}: admin listener without an Admin API handler; closed", id_);
    ::close(fd);
    return;
  }
  listeners_.push_back(std::make_unique<Listener>(*this, fd, cap, kind, tls));
  loop_.add(fd, listeners_.back().get(), EPOLLIN | EPOLLET);
}

void Worker::run() {
  if (settings_->io_uring) {
    std::string why;
    if (loop_.enable_ring(&why)) {
      SLUICE_LOG(kInfo, "worker {}: socket calls batched through io_uring", id_);
    } else {
      SLUICE_LOG(kWarn, "worker {}: io_uring not usable ({}); plain system calls", id_, why);
    }
  }
  loop_.run();
  if (const io::Ring* ring = loop_.ring()) {
    const io::RingStats& s = ring->stats();
    SLUICE_LOG(kInfo, "worker {}: io_uring: {} socket calls in {} submissions, {} made directly",
               id_, s.batched_calls, s.enters, s.direct_calls);
  }
  // Whatever is left after a drain deadline is closed here, on the worker's own thread.
  for (auto& [ptr, conn] : clients_) {
    idle_remove(ptr);
    conn_closed(ptr->cap());
    loop_.retire(std::move(conn));
  }
  clients_.clear();
  pool_.clear();
  loop_.bury();
  if (access_log_) {
    access_log_->flush();  // the lines of the requests that ended with the drain
  }
}

void Worker::publish(snapshot::SnapshotPtr snap) {
  loop_.post([this, snap = std::move(snap)]() mutable { set_snapshot(std::move(snap)); });
}

void Worker::set_snapshot(snapshot::SnapshotPtr snap) {
  snapshot_ = std::move(snap);
  balancers_.clear();
  balancers_.resize(snapshot_ ? snapshot_->upstreams.size() : 0);
  ++balancer_generation_;
  applied_version_.store(snapshot_ ? snapshot_->version : 0, std::memory_order_release);
}

void Worker::drain(uint32_t deadline_ms) {
  loop_.post([this, deadline_ms] {
    if (draining_) {
      return;
    }
    draining_ = true;
    drain_deadline_at_ = loop_.now_ms() + deadline_ms;
    // Retired, not destroyed: events for them may follow in this same batch.
    for (auto& l : listeners_) {
      loop_.remove(l->fd());
      loop_.retire(std::move(l));
    }
    listeners_.clear();
    pool_.clear();
    std::vector<ClientConn*> conns;
    conns.reserve(clients_.size());
    for (auto& [ptr, conn] : clients_) {
      conns.push_back(ptr);
    }
    for (ClientConn* c : conns) {
      if (clients_.count(c) != 0) {
        c->on_drain();
      }
    }
    loop_.arm(drain_timer_, deadline_ms);
    maybe_finish_drain();
  });
}

uint32_t Worker::drain_left_ms() const {
  uint64_t now = loop_.now_ms();
  return drain_deadline_at_ > now ? static_cast<uint32_t>(drain_deadline_at_ - now) : 0;
}

void Worker::on_drain_deadline(void* self) {
  auto* w = static_cast<Worker*>(self);
  SLUICE_LOG(kWarn, "worker {}: {} connection(s) still busy at the shutdown deadline", w->id_,
             w->clients_.size());
  w->loop_.stop();
}

void Worker::maybe_finish_drain() {
  if (draining_ && clients_.empty()) {
    io::TimerQueue::cancel(drain_timer_);
    loop_.stop();
  }
}

upstream::Balancer& Worker::balancer(const upstream::Upstream& up) {
  std::unique_ptr<upstream::Balancer>* slot = nullptr;
  if (snapshot_ && up.index < snapshot_->upstreams.size() &&
      snapshot_->upstreams[up.index].get() == &up) [[likely]] {
    slot = &balancers_[up.index];
  } else {
    slot = &stray_[static_cast<size_t>(up.type)];
  }
  if (!*slot) [[unlikely]] {
    *slot = upstream::make_balancer(up, (static_cast<uint64_t>(id_) << 32) + up.index + 1);
  }
  return **slot;
}

void Worker::accept_client(int fd, const io::SockAddr& peer, uint16_t local_port, ConnCounter* cap,
                           ListenerKind kind, const tls::ServerContext* tls) {
  if (draining_) {
    ::close(fd);
    return;
  }
  if (at_cap(cap) && !make_room(cap)) {
    metrics::ConnStats::inc(stats_.accepted);
    shed(fd);
    return;
  }
  limits_->total.open.fetch_add(1, std::memory_order_relaxed);
  if (cap != nullptr) {
    cap->open.fetch_add(1, std::memory_order_relaxed);
  }
  using metrics::ConnStats;
  ConnStats::inc(stats_.accepted);
  ConnStats::inc(stats_.handled);
  ConnStats::inc(stats_.active);
  auto conn = std::make_unique<ClientConn>(*this, fd, peer, local_port, cap, kind, tls);
  ClientConn* raw = conn.get();
  clients_.emplace(raw, std::move(conn));
  loop_.add(fd, raw);
}

void Worker::refresh_reading() {
  uint64_t busy = stats_.waiting.load(std::memory_order_relaxed) +
                  stats_.writing.load(std::memory_order_relaxed);
  uint64_t active = stats_.active.load(std::memory_order_relaxed);
  stats_.reading.store(active > busy ? active - busy : 0, std::memory_order_relaxed);
}

bool Worker::at_cap(const ConnCounter* cap) const {
  return clients_.size() >= settings_->worker_connections || limits_->total.full() ||
         (cap != nullptr && cap->full());
}

// Closes idle connections, oldest first, until the new one fits. Only connections of the
// same listener help when that listener is the one at its cap; the walk is bounded.
bool Worker::make_room(const ConnCounter* cap) {
  ClientConn* c = idle_head_;
  for (int looked = 0; c != nullptr && looked < 64; ++looked) {
    ClientConn* next = c->idle_next;
    bool helps = cap == nullptr || !cap->full() || c->cap() == cap;
    if (helps && !c->read_pending()) {  // one whose request is being read is not idle
      c->evict();
      if (!at_cap(cap)) {
        return true;
      }
    }
    c = next;
  }
  return false;
}

// Refuses a connection at a cap with a 503 the client can read, without allocating.
void Worker::shed(int fd) {
  // Counted as accepted but not handled, as nginx's stub_status does.
  static constexpr std::string_view kBusy =
      "HTTP/1.1 503 Service Temporarily Unavailable\r\nContent-Type: application/json\r\n"
      "Content-Length: 37\r\nConnection: close\r\n\r\n{\"error_msg\":\"too many connections\"}\n";
  ssize_t w = io::send_now(fd, kBusy.data(), kBusy.size());
  (void)w;
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
  SLUICE_LOG(kWarn, "connection cap reached: new connection refused with 503");
}

void Worker::conn_closed(ConnCounter* cap) {
  metrics::ConnStats::dec(stats_.active);
  refresh_reading();
  limits_->total.open.fetch_sub(1, std::memory_order_relaxed);
  if (cap != nullptr) {
    cap->open.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Worker::idle_add(ClientConn* c) {
  if (c->idle) {
    return;
  }
  c->idle = true;
  metrics::ConnStats::inc(stats_.waiting);
  refresh_reading();
  c->idle_prev = idle_tail_;
  c->idle_next = nullptr;
  (idle_tail_ ? idle_tail_->idle_next : idle_head_) = c;
  idle_tail_ = c;
}

void Worker::idle_remove(ClientConn* c) {
  if (!c->idle) {
    return;
  }
  c->idle = false;
  metrics::ConnStats::dec(stats_.waiting);
  refresh_reading();
  (c->idle_prev ? c->idle_prev->idle_next : idle_head_) = c->idle_next;
  (c->idle_next ? c->idle_next->idle_prev : idle_tail_) = c->idle_prev;
  c->idle_prev = c->idle_next = nullptr;
}

void Worker::close_client(ClientConn* c) {
  auto it = clients_.find(c);
  if (it == clients_.end()) {
    return;
  }
  idle_remove(c);
  conn_closed(c->cap());
  loop_.retire(std::move(it->second));
  clients_.erase(it);
  maybe_finish_drain();
}

uint64_t Worker::admin_wait(ClientConn* c) {
  uint64_t id = next_admin_id_++;
  admin_waiting_.emplace(id, c);
  return id;
}

void Worker::admin_forget(uint64_t id) { admin_waiting_.erase(id); }

std::function<void(AdminResponse)> Worker::admin_replier(uint64_t id) {
  // Only `this` and the id are captured: the connection may be gone when the answer comes.
  return [this, id](AdminResponse resp) {
    loop_.post(
        [this, id, resp = std::move(resp)]() mutable { on_admin_reply(id, std::move(resp)); });
  };
}

void Worker::on_admin_reply(uint64_t id, AdminResponse resp) {
  auto it = admin_waiting_.find(id);
  if (it == admin_waiting_.end()) {
    return;  // the connection closed or timed out meanwhile
  }
  ClientConn* c = it->second;
  admin_waiting_.erase(it);
  c->on_admin_reply(std::move(resp));
}

uint64_t Worker::suspend(plugin::Context& ctx) {
  uint64_t token = next_plugin_token_++;
  auto* ex = static_cast<Exchange*>(ctx.conn);
  plugin_waiting_.emplace(token, ex);
  ex->plugin_suspended(token);
  return token;
}

plugin::Context* Worker::waiting(uint64_t token) {
  auto it = plugin_waiting_.find(token);
  return it == plugin_waiting_.end() ? nullptr : &it->second->plugin_context();
}

void Worker::resume(uint64_t token, plugin::Action a) {
  auto it = plugin_waiting_.find(token);
  if (it == plugin_waiting_.end()) {
    return;  // the request ended meanwhile
  }
  Exchange* ex = it->second;
  plugin_waiting_.erase(it);
  ex->on_plugin_resume(a);
}

namespace {
// Beyond this many free entries, returned ones are freed: a burst does not pin its memory.
constexpr size_t kMaxFree = 256;
}  // namespace

std::unique_ptr<H1Message> Worker::take_message() {
  if (free_messages_.empty()) {
    return std::make_unique<H1Message>(*this);
  }
  auto m = std::move(free_messages_.back());
  free_messages_.pop_back();
  return m;
}

void Worker::give_message(std::unique_ptr<H1Message> m) {
  if (m && free_messages_.size() < kMaxFree) {
    free_messages_.push_back(std::move(m));
  }
}

void Worker::take_buffer(io::Buffer* b) {
  if (free_buffers_.empty()) {
    b->reserve_total(settings_->read_buffer);
    return;
  }
  b->adopt(std::move(free_buffers_.back()), settings_->read_buffer);
  free_buffers_.pop_back();
}

void Worker::give_buffer(io::Buffer* b) {
  // Only empty buffers of the standard size go back; a grown one is simply freed.
  if (b->capacity() == settings_->read_buffer && b->empty() && free_buffers_.size() < kMaxFree) {
    free_buffers_.push_back(b->detach());
  } else {
    b->release();
  }
}

void Worker::log_access(const accesslog::Record& r) {
  if (access_log_->log(r, loop_.now_ms())) {
    loop_.arm(access_log_timer_, access_log_->config().flush_ms);
  }
}

void Worker::on_access_log_timer(void* self) { static_cast<Worker*>(self)->access_log_->flush(); }

void Worker::reopen_access_log() {
  loop_.post([this] {
    if (access_log_) {
      io::TimerQueue::cancel(access_log_timer_);
      access_log_->reopen();
    }
  });
}

std::string_view Worker::http_date() {
  time_t now = time(nullptr);
  if (now != date_second_) {
    date_second_ = now;
    tm t;
    gmtime_r(&now, &t);
    strftime(date_, sizeof(date_), "%a, %d %b %Y %H:%M:%S GMT", &t);
  }
  return date_;
}

}  // namespace sluice::server
