// The tunnel's two directions. Each is a small loop (pump): write what was handed to the
// destination, hand it the next bytes, or read more from the source, until the sockets say
// wait. A direction reads only when everything it read was written: its buffer never moves
// under a write in flight, and never grows past one read.

#include "proxy/tunnel.h"

#include <stdlib.h>

#include <cstring>

namespace sluice::proxy {

Tunnel::Tunnel(TunnelEnd client, TunnelEnd upstream, bool websocket)
    : up_(client, upstream.stream), down_(upstream, client.stream), websocket_(websocket) {}

Tunnel::State Tunnel::step() {
  for (Pipe* p : {&up_, &down_}) {
    if (state_ != State::kOpen) {
      break;
    }
    if (p->ended) {
      continue;
    }
    switch (pump(*p)) {
      case Flow::kWait:
        break;
      case Flow::kDone:
        p->ended = true;
        break;
      case Flow::kFailed:
        state_ = State::kFailed;
        break;
    }
  }
  if (state_ == State::kOpen && up_.ended && down_.ended) {
    state_ = State::kDone;
  }
  return state_;
}

void Tunnel::close_politely() {
  if (!websocket_) {
    return;
  }
  for (Pipe* p : {&up_, &down_}) {
    if (p->shut || p->closing) {
      continue;  // that side's peer already read our half-close
    }
    p->closing = true;
    if (p == &up_) {
      uint8_t mask[4];
      arc4random_buf(mask, sizeof(mask));  // never blocks
      ws_close_frame_to_server(kWsGoingAway, mask, p->close_frame);
      p->close_len = kWsCloseFrameToServerLen;
    } else {
      ws_close_frame_to_client(kWsGoingAway, p->close_frame);
      p->close_len = kWsCloseFrameToClientLen;
    }
  }
}

void Tunnel::fail(const char* what, int err) {
  error_ = what;
  if (err != 0) {
    error_.append(": ").append(std::strerror(err));
  }
}

Tunnel::Flow Tunnel::write_out(Pipe& p) {
  if (!p.dst->writable()) {
    return Flow::kWait;
  }
  int err = 0;
  switch (p.dst->write(p.out, &err)) {
    case io::Outbox::Result::kQueued:
    case io::Outbox::Result::kBlocked:
      return Flow::kWait;
    case io::Outbox::Result::kError:
      fail(&p == &up_ ? "write to the upstream failed" : "write to the client failed", err);
      return Flow::kFailed;
    case io::Outbox::Result::kDone:
      break;
  }
  ++activity_;
  p.writing = false;
  p.buf->consume(p.inflight);
  p.moved += p.inflight;
  p.inflight = 0;
  if (p.close_queued) {
    // Our Close frame is out: nothing more goes this way, and the peer's answer is dropped.
    p.close_queued = false;
    p.dropping = true;
    p.buf->clear();
    p.dst->shutdown_write();
    p.shut = true;
  }
  return Flow::kDone;
}

bool Tunnel::queue_next(Pipe& p) {
  if (p.dropping) {
    p.buf->clear();
    return false;
  }
  if (p.closing && p.frames.at_boundary()) {
    p.out.add({p.close_frame, p.close_len});
    p.close_queued = true;
    p.writing = true;
    return true;
  }
  if (p.buf->empty()) {
    return false;
  }
  size_t n = p.buf->size();
  if (websocket_) {
    n = p.frames.advance(p.buf->view(), p.closing);  // while closing: up to the frame's end
  }
  p.out.add({p.buf->data(), n});
  p.inflight = n;
  p.writing = true;
  return true;
}

Tunnel::Flow Tunnel::pump(Pipe& p) {
  while (true) {
    if (p.writing) {
      if (Flow f = write_out(p); f != Flow::kDone) {
        return f;
      }
    }
    if (queue_next(p)) {
      continue;
    }
    if (p.eof) {
      // All it sent was passed on: its close goes the same way, as a half-close.
      if (!p.shut) {
        p.dst->shutdown_write();
        p.shut = true;
      }
      return Flow::kDone;
    }
    size_t before = p.buf->size();
    switch (p.src->read(*p.buf, p.max)) {
      case io::Transport::Read::kData:
        activity_ += p.buf->size() != before;
        continue;
      case io::Transport::Read::kWait:
        return Flow::kWait;
      case io::Transport::Read::kEof:
        break;
    }
    if (p.src->failed()) {
      fail(&p == &up_ ? "the client reset the connection" : "the upstream reset the connection", 0);
      return Flow::kFailed;
    }
    p.eof = true;
  }
}

}  // namespace sluice::proxy
