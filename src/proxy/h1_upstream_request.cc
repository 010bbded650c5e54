#include "proxy/h1_upstream_request.h"

#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/log.h"

namespace sluice::proxy {

std::string_view server_name(std::string_view host) {
  if (!host.empty() && host[0] == '[') {
    size_t end = host.find(']');
    return end == std::string_view::npos ? host : host.substr(1, end - 1);
  }
  return host.substr(0, host.find(':'));
}

H1UpstreamRequest::~H1UpstreamRequest() { release(false); }

void H1UpstreamRequest::prepare(const RequestStart& r) {
  upgrade_asked_ = r.upgrade;
  head_.clear();
  head_.append(r.method).push_back(' ');
  head_.append(r.target).append(" HTTP/1.1\r\n");
  host_offset_ = head_.size();  // each try's open() puts its Host here
  host_len_ = 0;
  for (const http::Header& f : r.fields) {
    head_.append(f.name).append(": ").append(f.value).append("\r\n");
  }
  switch (r.body) {
    case RequestStart::Body::kNone:
      break;
    case RequestStart::Body::kEmpty:
      head_.append("Content-Length: 0\r\n");  // an explicit empty body (POST) stays explicit
      break;
    case RequestStart::Body::kLength: {
      char buf[24];
      auto end = std::to_chars(buf, buf + sizeof(buf), r.length).ptr;
      head_.append("Content-Length: ").append(buf, end).append("\r\n");
      break;
    }
    case RequestStart::Body::kChunked:
      head_.append("Transfer-Encoding: chunked\r\n");
      break;
  }
  head_.append("\r\n");
}

void H1UpstreamRequest::set_host(std::string_view host) {
  if (host_len_ > 0) {
    head_.erase(host_offset_, host_len_);
  }
  host_len_ = 0;
  if (!host.empty()) {
    // Three inserts in place: no temporary string on the request path.
    head_.insert(host_offset_, "\r\n");
    head_.insert(host_offset_, host);
    head_.insert(host_offset_, "Host: ");
    host_len_ = host.size() + 8;
  }
}

// A TLS connection's pool key (and the key its session is kept under): the node, the server
// name and the client context, so a connection made for one name or client certificate never
// serves another.
const std::string& H1UpstreamRequest::pool_key(const Target& t, std::string_view name) {
  if (t.tls == nullptr) {
    return *t.key;
  }
  char ctx[20];
  auto end =
      std::to_chars(ctx, ctx + sizeof(ctx), reinterpret_cast<uintptr_t>(t.tls->get()), 16).ptr;
  pool_key_.assign(*t.key).append(1, '|').append(name).append(1, '|').append(ctx, end);
  return pool_key_;
}

bool H1UpstreamRequest::open(const Target& t, bool fresh, UpstreamOwner* owner, int* err) {
  release(false);
  target_ = t;
  written_ = false;
  error_ = {};
  kind_ = http::BodyKind::kNone;
  left_ = 0;
  keep_alive_ = false;
  done_ = false;
  upgraded_ = false;
  consume_ = 0;
  chunked_.reset();
  std::string_view name = t.tls != nullptr ? server_name(t.host) : std::string_view();
  const std::string& key = pool_key(t, name);
  if (!fresh) {
    conn_ = env_.pool->take(key);
  }
  reused_ = conn_ != nullptr;
  if (!conn_) {
    int fd = io::connect_nonblocking(*t.addr);
    if (fd < 0) {
      *err = -fd;
      return false;
    }
    conn_ = std::make_unique<UpstreamConn>(*env_.loop, fd, key);
    if (t.tls != nullptr) {
      SSL* ssl = (*t.tls)->new_ssl(name, key);
      if (ssl == nullptr) {
        conn_.reset();  // closes the socket
        *err = ENOMEM;
        return false;
      }
      conn_->start_tls(ssl, *t.tls);
    }
    conn_->in().reserve_total(env_.read_buffer);
    env_.loop->add(fd, conn_.get());
  }
  conn_->owner = owner;
  ++conn_->requests;
  set_host(t.host);
  out_.add(head_);
  return true;
}

void H1UpstreamRequest::add_body(std::string_view piece, bool chunked) {
  if (!chunked) {
    out_.add(piece);
    return;
  }
  if (piece.empty()) {
    return;  // an empty chunk would end the body
  }
  size_t hl = h1::format_chunk_size(piece.size(), chunk_hdr_);
  out_.add({chunk_hdr_, hl});
  out_.add(piece);
  out_.add(h1::kChunkEnd);
}

void H1UpstreamRequest::add_body_end(bool chunked) {
  if (chunked) {
    out_.add(h1::kLastChunk);
  }
}

UpstreamRequest::Send H1UpstreamRequest::send(int* err) {
  io::SocketTransport& t = conn_->socket();
  if (!conn_->connected) {
    if (!t.writable() && !t.hangup()) {
      return Send::kWait;
    }
    int e = io::socket_error(conn_->fd());
    if (e != 0) {
      *err = e;
      return Send::kConnectFailed;
    }
    conn_->connected = true;
    t.set_writable(true);
  }
  if (out_.empty()) {
    return Send::kDone;
  }
  if (!t.writable()) {
    return Send::kWait;
  }
  // On a TLS connection the handshake runs first, inside the write (kQueued while it waits for
  // the server's answer); no byte of the request leaves before it ends.
  bool handshaking = !conn_->ready();
  switch (conn_->stream().write(out_, err)) {
    case io::Outbox::Result::kQueued:
      return Send::kWait;
    case io::Outbox::Result::kBlocked:
      written_ = written_ || conn_->ready();  // perhaps only part of it
      return Send::kWait;
    case io::Outbox::Result::kError:
      if (handshaking) {
        const std::string& why = conn_->tls()->error();
        tls_error_ = "TLS handshake failed: ";
        tls_error_.append(why.empty() ? std::strerror(*err) : why);
        error_ = tls_error_;
        return Send::kConnectFailed;
      }
      return Send::kWriteFailed;
    case io::Outbox::Result::kDone:
      break;
  }
  written_ = true;
  return Send::kDone;
}

bool H1UpstreamRequest::answered_early() {
  if (!conn_ || !conn_->ready()) {
    return false;
  }
  if (!conn_->in().empty()) {
    return true;
  }
  // One read attempt: nothing (or a read queued on the ring, whose result wakes the owner)
  // says no; bytes or an EOF say yes.
  return read_more() != io::Transport::Read::kWait;
}

io::Transport::Read H1UpstreamRequest::read_more() {
  size_t before = conn_->in().size();
  io::Transport::Read r = conn_->stream().read(conn_->in(), env_.max_read_buffer);
  if (r == io::Transport::Read::kData) {
    received_ += conn_->in().size() - before;
  }
  return r;
}

UpstreamRequest::Head H1UpstreamRequest::read_head(http::Method method, http::ResponseHead* head) {
  io::Buffer& b = conn_->in();
  while (true) {
    if (!b.empty()) {
      h1::ParseResult r = h1::parse_response(b.view(), *env_.limits, method, head);
      if (r.status == h1::ParseStatus::kComplete) {
        if (head->status >= 100 && head->status < 200 && head->status != 101) {
          b.consume(r.consumed);  // interim responses are the gateway's business, not relayed
          continue;
        }
        if (head->status == 101) {
          return switched(r.consumed, *head);
        }
        b.consume(r.consumed);  // the head's views stay valid: consume() moves no bytes
        kind_ = head->body_kind;
        left_ = head->content_length;
        keep_alive_ = head->keep_alive;
        done_ = kind_ == http::BodyKind::kNone || (kind_ == http::BodyKind::kLength && left_ == 0);
        return Head::kHead;
      }
      if (r.status == h1::ParseStatus::kError) {
        error_ = r.error;
        return Head::kBad;
      }
    }
    switch (read_more()) {
      case io::Transport::Read::kData:
        continue;
      case io::Transport::Read::kWait:
        return Head::kWait;
      case io::Transport::Read::kEof:
        return Head::kClosed;
    }
  }
}

// RFC 9110 15.2.2: a server switches only to a protocol the client's Upgrade named, and
// names it in its own Upgrade field. A 101 to a request that did not ask (its Upgrade was not
// passed on) is a broken answer, never a tunnel.
UpstreamRequest::Head H1UpstreamRequest::switched(size_t head_len, const http::ResponseHead& head) {
  if (!upgrade_asked_) {
    error_ = "101 Switching Protocols to a request that did not ask to upgrade";
    return Head::kBad;
  }
  if (head.find("upgrade") == nullptr) {
    error_ = "101 Switching Protocols without an Upgrade field";
    return Head::kBad;
  }
  conn_->in().consume(head_len);  // the head's views stay valid: consume() moves no bytes
  upgraded_ = true;
  kind_ = http::BodyKind::kNone;
  keep_alive_ = false;
  done_ = true;
  return Head::kHead;
}

TunnelEnd H1UpstreamRequest::upgrade() {
  return {&conn_->stream(), &conn_->in(), env_.max_read_buffer};
}

UpstreamRequest::Body H1UpstreamRequest::read_body(std::string_view* piece) {
  io::Buffer& b = conn_->in();
  while (!done_) {
    if (!b.empty()) {
      if (kind_ == http::BodyKind::kLength || kind_ == http::BodyKind::kUntilClose) {
        size_t n = b.size();
        if (kind_ == http::BodyKind::kLength) {
          n = static_cast<size_t>(std::min<uint64_t>(left_, n));
          left_ -= n;
          done_ = left_ == 0;
        }
        *piece = {b.data(), n};
        consume_ = n;
        return Body::kData;
      }
      h1::ChunkedDecoder::Step s = chunked_.step(b.view());
      switch (s.status) {
        case h1::ChunkedDecoder::Status::kData:
          *piece = s.data;
          consume_ = s.consumed;
          return Body::kData;
        case h1::ChunkedDecoder::Status::kDone:
          b.consume(s.consumed);
          done_ = true;
          continue;
        case h1::ChunkedDecoder::Status::kNeedMore:
          b.consume(s.consumed);
          if (s.consumed != 0) {
            continue;
          }
          break;
        case h1::ChunkedDecoder::Status::kError:
          return Body::kBad;
      }
    }
    switch (read_more()) {
      case io::Transport::Read::kData:
        continue;
      case io::Transport::Read::kWait:
        return Body::kWait;
      case io::Transport::Read::kEof:
        if (kind_ == http::BodyKind::kUntilClose && !conn_->failed()) {
          done_ = true;
          continue;
        }
        return Body::kCut;
    }
  }
  return Body::kEnd;
}

void H1UpstreamRequest::consume() {
  if (conn_ && consume_ != 0) {
    conn_->in().consume(consume_);
  }
  consume_ = 0;
}

bool H1UpstreamRequest::reusable() const {
  return conn_ && !upgraded_ && keep_alive_ && kind_ != http::BodyKind::kUntilClose && done_ &&
         conn_->in().empty();
}

void H1UpstreamRequest::release(bool reusable) {
  out_.clear();
  if (!conn_) {
    return;
  }
  conn_->owner = nullptr;
  io::SocketTransport& t = conn_->socket();
  if (conn_->stream().cancel_read()) {
    reusable = false;  // bytes, FIN or an error after the response: not clean
  }
  if (tls::TlsTransport* tls = conn_->tls()) {
    keep_session();
    reusable = reusable && tls->error().empty();
  }
  reusable = reusable && !upgraded_;  // a tunnel's connection speaks another protocol now
  if (reusable && !t.hangup() && !t.fin() && conn_->requests < target_.pool_requests) {
    t.set_readable(false);
    if (tls::TlsTransport* tls = conn_->tls()) {
      tls->release_buffers();
    }
    env_.pool->put(std::move(conn_), target_.pool_size, target_.pool_idle_ms);
  } else {
    if (tls::TlsTransport* tls = conn_->tls(); tls != nullptr && tls->error().empty()) {
      tls->close_notify();  // a clean end for the upstream, as nginx's ngx_ssl_shutdown
    }
    env_.loop->retire(std::move(conn_));
  }
}

// Once per connection, after its handshake (and, with TLS 1.3, once a ticket came: the
// session is not resumable before): the next new connection to the same node and name
// resumes it.
void H1UpstreamRequest::keep_session() {
  tls::TlsTransport* tls = conn_->tls();
  if (conn_->session_kept || !tls->handshake_done() || !tls->error().empty()) {
    return;
  }
  conn_->session_kept = conn_->tls_context()->keep_session(conn_->key(), tls->ssl());
}

}  // namespace sluice::proxy
