#include "server/worker.h"

#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "server/client_conn.h"
#include "server/listener.h"

namespace sluice::server {

Worker::Worker(int id, std::shared_ptr<const Settings> settings)
    : id_(id), settings_(std::move(settings)), pool_(loop_) {}

Worker::~Worker() {
  clients_.clear();
  listeners_.clear();
  pool_.clear();
}

void Worker::add_listener(int fd) {
  listeners_.push_back(std::make_unique<Listener>(*this, fd));
  loop_.add(fd, listeners_.back().get(), EPOLLIN | EPOLLET);
}

void Worker::run() {
  loop_.run();
  // Whatever is left after a drain deadline is closed here, on the worker's own thread.
  for (auto& [ptr, conn] : clients_) {
    loop_.retire(std::move(conn));
  }
  clients_.clear();
  pool_.clear();
}

void Worker::publish(snapshot::SnapshotPtr snap) {
  loop_.post([this, snap = std::move(snap)]() mutable {
    snapshot_ = std::move(snap);
    cursors_.clear();
    cursors_.resize(snapshot_ ? snapshot_->upstreams.size() : 0);
  });
}

void Worker::drain(uint32_t deadline_ms) {
  loop_.post([this, deadline_ms] {
    if (draining_) {
      return;
    }
    draining_ = true;
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

upstream::RoundRobin& Worker::cursor(const upstream::Upstream& up) { return cursors_[up.index]; }

void Worker::accept_client(int fd, const io::SockAddr& peer, uint16_t local_port) {
  if (draining_) {
    ::close(fd);
    return;
  }
  auto conn = std::make_unique<ClientConn>(*this, fd, peer, local_port);
  ClientConn* raw = conn.get();
  clients_.emplace(raw, std::move(conn));
  loop_.add(fd, raw);
}

void Worker::close_client(ClientConn* c) {
  auto it = clients_.find(c);
  if (it == clients_.end()) {
    return;
  }
  loop_.retire(std::move(it->second));
  clients_.erase(it);
  maybe_finish_drain();
}

namespace {
// Beyond this many free entries, returned ones are freed: a burst does not pin its memory.
constexpr size_t kMaxFree = 256;
}  // namespace

std::unique_ptr<Exchange> Worker::take_exchange() {
  if (free_exchanges_.empty()) {
    return std::make_unique<Exchange>();
  }
  auto ex = std::move(free_exchanges_.back());
  free_exchanges_.pop_back();
  return ex;
}

void Worker::give_exchange(std::unique_ptr<Exchange> ex) {
  if (ex && free_exchanges_.size() < kMaxFree) {
    free_exchanges_.push_back(std::move(ex));
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
