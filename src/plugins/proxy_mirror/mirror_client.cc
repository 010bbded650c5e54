#include "plugins/proxy_mirror/mirror_client.h"

#include <fmt/format.h>

#include <cstring>

#include "common/log.h"

namespace sluice::plugins::proxy_mirror {

MirrorJob::MirrorJob(MirrorClient& client, std::shared_ptr<const MirrorPeer> peer, MirrorCopy copy)
    : client_(client), peer_(std::move(peer)), copy_(std::move(copy)), up_(client.env()) {}

MirrorJob::~MirrorJob() {
  io::TimerQueue::cancel(timer_);
  up_.release(false);
}

bool MirrorJob::start() {
  for (const auto& [name, value] : copy_.fields) {
    fields_.push_back(http::Header{name, value});
  }
  proxy::RequestStart r;
  r.method = copy_.method;
  r.target = copy_.target;
  r.fields = fields_;
  r.body = copy_.has_body ? proxy::RequestStart::Body::kLength : proxy::RequestStart::Body::kNone;
  r.length = copy_.body.size();
  up_.prepare(r);
  target_.addr = &peer_->addr;
  target_.key = &peer_->key;
  target_.host = copy_.host;
  target_.pool_size = 32;
  target_.pool_idle_ms = 60000;
  target_.pool_requests = 1000;
  target_.tls = peer_->tls ? &peer_->tls : nullptr;
  int err = 0;
  if (!up_.open(target_, false, this, &err)) {
    SLUICE_LOG(kInfo, "proxy-mirror: connect to {} failed: {}", peer_->key, strerror(err));
    return false;
  }
  if (copy_.has_body) {
    up_.add_body(copy_.body, false);
    up_.add_body_end(false);
  }
  client_.loop().arm(timer_, up_.connected() ? peer_->send_ms : peer_->connect_ms);
  drive();
  return true;
}

void MirrorJob::on_upstream_event() { drive(); }

void MirrorJob::drive() {
  if (state_ == State::kSend) {
    int err = 0;
    const bool was_connected = up_.connected();
    switch (up_.send(&err)) {
      case proxy::UpstreamRequest::Send::kWait:
        if (!was_connected && up_.connected()) {
          client_.loop().arm(timer_, peer_->send_ms);
        }
        return;
      case proxy::UpstreamRequest::Send::kConnectFailed:
      case proxy::UpstreamRequest::Send::kWriteFailed:
        SLUICE_LOG(kInfo, "proxy-mirror: sending to {} failed: {}", peer_->key,
                   up_.error().empty() ? std::string_view(strerror(err)) : up_.error());
        finish(false);
        return;
      case proxy::UpstreamRequest::Send::kDone:
        state_ = State::kHead;
        client_.loop().arm(timer_, peer_->read_ms);
        break;
    }
  }
  if (state_ == State::kHead) {
    switch (up_.read_head(http::parse_method(copy_.method), &head_)) {
      case proxy::UpstreamRequest::Head::kWait:
        return;
      case proxy::UpstreamRequest::Head::kClosed:
      case proxy::UpstreamRequest::Head::kBad:
        finish(false);
        return;
      case proxy::UpstreamRequest::Head::kHead:
        state_ = State::kBody;
        break;
    }
  }
  while (state_ == State::kBody) {
    std::string_view piece;
    switch (up_.read_body(&piece)) {
      case proxy::UpstreamRequest::Body::kData:
        up_.consume();  // read and dropped
        continue;
      case proxy::UpstreamRequest::Body::kWait:
        client_.loop().arm(timer_, peer_->read_ms);  // counts from the last bytes
        return;
      case proxy::UpstreamRequest::Body::kEnd:
        finish(up_.reusable());
        return;
      case proxy::UpstreamRequest::Body::kCut:
      case proxy::UpstreamRequest::Body::kBad:
        finish(false);
        return;
    }
  }
}

void MirrorJob::finish(bool reusable) {
  if (state_ == State::kDone) {
    return;
  }
  state_ = State::kDone;
  io::TimerQueue::cancel(timer_);
  up_.release(reusable);
  client_.done(this);
}

void MirrorJob::on_timeout(void* self) {
  auto* job = static_cast<MirrorJob*>(self);
  SLUICE_LOG(kInfo, "proxy-mirror: {} timed out", job->peer_->key);
  job->finish(false);
}

MirrorClient::MirrorClient(io::EventLoop& loop) : loop_(loop), pool_(loop) {
  env_.loop = &loop_;
  env_.pool = &pool_;
  env_.limits = &limits_;
}

MirrorClient::~MirrorClient() {
  for (MirrorJob* j : jobs_) {
    delete j;
  }
  pool_.clear();
}

void MirrorClient::send(std::shared_ptr<const MirrorPeer> peer, MirrorCopy copy) {
  if (!peer->resolved) {
    drop(fmt::format("{} does not resolve", peer->host));
    return;
  }
  if (jobs_.size() >= kMaxJobs || body_bytes_ + copy.body.size() > kMaxBodyBytes) {
    drop("too many mirror requests in flight");
    return;
  }
  body_bytes_ += copy.body.size();
  auto* job = new MirrorJob(*this, std::move(peer), std::move(copy));
  jobs_.insert(job);
  if (!job->start()) {
    done(job);
  }
}

void MirrorClient::done(MirrorJob* job) {
  // Destroyed from the loop: this may run inside the job's own callback.
  loop_.post([this, job] {
    if (jobs_.erase(job) != 0) {
      body_bytes_ -= job->body_size();
      delete job;
    }
  });
}

void MirrorClient::drop(std::string_view why) {
  ++dropped_;
  uint64_t now = loop_.now_ms();
  if (last_log_ms_ != 0 && now - last_log_ms_ < 1000) {
    return;
  }
  SLUICE_LOG(kWarn,
             "proxy-mirror: dropped {} mirror request(s) since the last report ({}; {} in "
             "flight on this worker)",
             dropped_ - dropped_logged_, why, jobs_.size());
  dropped_logged_ = dropped_;
  last_log_ms_ = now == 0 ? 1 : now;
}

}  // namespace sluice::plugins::proxy_mirror
